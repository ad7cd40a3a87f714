# Tuisong — the two commands a fresh Debian 12 machine with the Swift toolchain needs:
#   make run    installs what is missing, builds release, serves config/tuisong.json
#   make test   installs what is missing, runs every test
SHELL := /bin/bash
SWIFT ?= swift
CONFIG ?= config/tuisong.json
TEST_OUTPUT ?= test-output

# Debian packages: build-time libraries, then tools the tests and benchmarks drive.
BUILD_PACKAGES := pkg-config libmicrohttpd-dev libnghttp2-dev libssl-dev libsqlite3-dev
TEST_PACKAGES := openssl curl nghttp2-client chromium chromium-driver python3-pip
BENCH_PACKAGES := wrk nghttp2-client sqlite3 curl
PYTHON ?= python3

.PHONY: all build release run test test-swift test-browser deps test-deps bench bench-http bench-apns clean check-config

all: build

# Installs only the packages dpkg does not already report as installed; as root (CI and this
# machine) directly, otherwise through sudo.
define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq < /dev/null && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing < /dev/null; \
	fi
endef

deps:
	$(call apt_install,$(BUILD_PACKAGES))

test-deps: deps
	$(call apt_install,$(TEST_PACKAGES))
	@$(PYTHON) -c "import selenium" 2>/dev/null || $(PYTHON) -m pip install --quiet selenium < /dev/null

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/tuisong serve --config $(CONFIG)

check-config: release
	.build/release/tuisong check-config --config $(CONFIG)

test: test-deps
	@mkdir -p $(TEST_OUTPUT)
	$(SWIFT) build --build-tests
	@# One test at a time: several suites measure latency and timeouts, and on a 2-core machine
	@# running them side by side makes them measure each other (the whole suite takes ~70 s).
	$(SWIFT) test --skip-build --no-parallel
	@if [ -d Tests/browser ] && ls Tests/browser/test_*.py >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory test-browser; fi

# The console in headless Chromium against a real `tuisong serve` (the debug build the Swift
# tests just made). Screenshots and server logs land in $(TEST_OUTPUT)/browser; `timeout`
# bounds the whole run whatever hangs.
test-browser: test-deps
	$(call apt_install,fonts-wqy-microhei)
	@$(PYTHON) -c "import pytest" 2>/dev/null || $(PYTHON) -m pip install --quiet pytest < /dev/null
	$(SWIFT) build --product tuisong
	@mkdir -p $(TEST_OUTPUT)/browser
	TEST_OUTPUT="$(abspath $(TEST_OUTPUT))" TUISONG_BIN="$(CURDIR)/.build/debug/tuisong" \
	  timeout -k 10 600 $(PYTHON) -m pytest -q -p no:cacheprovider Tests/browser \
	  --junitxml="$(abspath $(TEST_OUTPUT))/browser/junit.xml" < /dev/null

bench: bench-http bench-apns

bench-http: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/http.sh

bench-apns: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/apns.sh

clean:
	rm -rf .build $(TEST_OUTPUT)
