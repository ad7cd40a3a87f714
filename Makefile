# Tuisong — the two commands a fresh Debian 12 machine with the Swift toolchain needs:
#   make run    installs what is missing, builds release, serves config/tuisong.json
#   make test   installs what is missing, runs every test
SHELL := /bin/bash
SWIFT ?= swift
CONFIG ?= config/tuisong.json
TEST_OUTPUT ?= test-output
# Swift tests run at once (make test, make test-swift). On 2 cores at load 7-10 (other builds),
# issue #46: width 4 took 184-203 s, 6 took 155-189 s, 8 took 196 s. On the idle machine, after
# the suite's CPU cuts of session fourteen: width 4 135-138 s, 5 135 s, 6 120-126 s, 8 130 s; the
# waits of tests on sockets and child processes leave a core idle at 4.
TEST_WIDTH ?= 6

# Debian packages: build-time libraries, then tools the tests and benchmarks drive.
BUILD_PACKAGES := pkg-config libmicrohttpd-dev libnghttp2-dev libssl-dev libsqlite3-dev libcurl4-openssl-dev libpq-dev
# python3 runs the Baidu signature cross-checks, JPush's own server SDK (`jpush` from PyPI, with
# requests) against the gateway, and the browser tests; Debian's own selenium and
# pytest, because Debian 12's system Python refuses `pip install` (PEP 668, externally managed).
# postgresql: the server the PostgreSQL tests start a throwaway cluster of (scripts/pg-test-cluster.sh).
TEST_PACKAGES := openssl curl nghttp2-client chromium chromium-driver fonts-wqy-microhei \
	python3 python3-pip python3-selenium python3-pytest python3-requests postgresql
BENCH_PACKAGES := wrk nghttp2-client sqlite3 curl python3 openssl postgresql
PYTHON ?= python3

.PHONY: all build release run test test-swift test-browser test-cluster deps test-deps bench bench-http bench-apns bench-android bench-faults bench-cluster bench-messages bench-cpu bench-memory bench-webhooks bench-receipts clean check-config format lint

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

# A python3 other than Debian's (pyenv, a venv) does not see the apt modules: pip for it.
define python_module
	@$(PYTHON) -c "import $(1)" 2>/dev/null || $(PYTHON) -m pip install --quiet $(1) < /dev/null \
	  || $(PYTHON) -m pip install --quiet --break-system-packages $(1) < /dev/null
endef

test-deps: deps
	$(call apt_install,$(TEST_PACKAGES))
	$(call python_module,selenium)
	$(call python_module,pytest)
	$(call python_module,requests)
	$(call python_module,jpush)

build: deps
	$(SWIFT) build

# Release builds optimize across modules, the dependencies' included (GRDB's generic writer,
# statements and cursors are called from the store): without it those calls instantiated
# generic metadata at run time (3.1-3.4 % of a SQLite chat line's CPU, 1.1-1.4 % with it) and
# ran unspecialized. Gateway CPU a chat line, same code with and without, medians of four
# alternated rounds: Easemob 0.91 x, Tencent 0.88 x; on the package's own modules only (a
# Package.swift flag cannot reach the dependencies), 0.94 and 0.98 (docs/benchmarks.md,
# session twenty-five). A plain `swift build -c release` builds without it (and rebuilds
# everything when it follows this one).
RELEASE_FLAGS ?= -Xswiftc -cross-module-optimization

release: deps
	$(SWIFT) build -c release $(RELEASE_FLAGS) --product tuisong

run: release
	.build/release/tuisong serve --config $(CONFIG)

check-config: release
	.build/release/tuisong check-config --config $(CONFIG)

test: test-deps lint
	@mkdir -p $(TEST_OUTPUT)
	$(SWIFT) build --build-tests
	@# The Swift tests run $(TEST_WIDTH) at a time, as make test-swift (see there); a throwaway
	@# PostgreSQL cluster serves them and then the cluster test, stopped and removed whatever the
	@# tests do (the trap runs on success, failure and interruption).
	@set -e; url=$$(scripts/pg-test-cluster.sh start); \
	  trap 'scripts/pg-test-cluster.sh stop "$$url"' EXIT; trap 'exit 130' INT TERM; \
	  echo "PostgreSQL test cluster: $$url"; \
	  TUISONG_TEST_DATABASE_URL="$$url" \
	    $(SWIFT) test --skip-build --experimental-maximum-parallelization-width $(TEST_WIDTH); \
	  TUISONG_TEST_DATABASE_URL="$$url" $(MAKE) --no-print-directory test-cluster
	@if [ -d Tests/browser ] && ls Tests/browser/test_*.py >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory test-browser; fi

# The Swift tests TEST_WIDTH at a time (issue #46: waits go through the injected clock, tests
# wait on conditions, so no test depends on another's timing; every test at once exhausts the
# test cluster's PostgreSQL connections and starves the socket tests). Children are started with
# the test kit's ChildProcess, never Foundation's Process: its run() in Swift 6.3.1 reads past
# glibc's readdir buffer (swift-corelibs-foundation #5472) and crashed one run in ten.
test-swift: test-deps
	$(SWIFT) build --build-tests
	@set -e; url=$$(scripts/pg-test-cluster.sh start); \
	  trap 'scripts/pg-test-cluster.sh stop "$$url"' EXIT; trap 'exit 130' INT TERM; \
	  TUISONG_TEST_DATABASE_URL="$$url" \
	    $(SWIFT) test --skip-build --experimental-maximum-parallelization-width $(TEST_WIDTH)

# The console in headless Chromium against a real `tuisong serve` (the debug build the Swift
# tests just made). Screenshots and server logs land in $(TEST_OUTPUT)/browser; `timeout`
# bounds the whole run whatever hangs.
test-browser: test-deps
	$(SWIFT) build --product tuisong
	$(SWIFT) build --product tuisong-with-test-transports
	@mkdir -p $(TEST_OUTPUT)/browser
	TEST_OUTPUT="$(abspath $(TEST_OUTPUT))" TUISONG_BIN="$(CURDIR)/.build/debug/tuisong" \
	  TUISONG_TEST_TRANSPORTS_BIN="$(CURDIR)/.build/debug/tuisong-with-test-transports" \
	  timeout -k 10 600 $(PYTHON) -m pytest -q -p no:cacheprovider Tests/browser \
	  --junitxml="$(abspath $(TEST_OUTPUT))/browser/junit.xml" < /dev/null

# Three `tuisong serve` nodes (the debug build) on one PostgreSQL database, a 200,000-device
# push, and a node killed, a node frozen past its lease, PostgreSQL restarted (issue #21), a node
# killed while sending 600 webhook events to a receiver on loopback (issue #43). On
# the cluster `make test` started (TUISONG_TEST_DATABASE_URL); alone, it starts its own. Logs
# and each scenario's figures land in $(TEST_OUTPUT)/cluster; `timeout` bounds the whole run.
test-cluster: test-deps
	$(SWIFT) build --product tuisong
	@mkdir -p $(TEST_OUTPUT)/cluster
	TEST_OUTPUT="$(abspath $(TEST_OUTPUT))" TUISONG_BIN="$(CURDIR)/.build/debug/tuisong" \
	  timeout -k 10 600 $(PYTHON) -m pytest -q -p no:cacheprovider Tests/cluster \
	  --junitxml="$(abspath $(TEST_OUTPUT))/cluster/junit.xml" < /dev/null

# Style: .swift-format (swift-format ships with the toolchain). `make format` rewrites in
# place; `make lint` (part of `make test`) fails on any deviation.
SWIFT_SOURCES = Package.swift Sources Tests Plugins

format:
	$(SWIFT) format -i -r --configuration .swift-format $(SWIFT_SOURCES)

lint:
	$(SWIFT) format lint -r --strict --configuration .swift-format $(SWIFT_SOURCES)

bench: bench-http bench-apns bench-android

bench-http: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/http.sh

bench-apns: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/apns.sh

bench-android: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/android.sh

# One node on SQLite, one and three on PostgreSQL, the same push; a Tencent push and lookups on
# PostgreSQL (issue #21). A throwaway PostgreSQL cluster from scripts/pg-test-cluster.sh.
bench-cluster: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/cluster.sh

bench-faults: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/faults.sh

# Many small messages (chat lines) under 0 and 150 ms of service latency, SQLite and PostgreSQL
# (1 and 3 nodes), and beside a 1M-device fan-out (issue #28; docs/benchmarks.md).
bench-messages: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/messages.sh

# Webhook events/s to a local receiver, and a tag push with 1 % failing tokens with and without
# delivery.failed subscribed (issue #43; docs/benchmarks.md). Bounded: it stops itself.
bench-webhooks: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/webhooks.sh

# Delivery receipts ingested per second in the services' batch sizes (Huawei 1,000 a POST,
# HarmonyOS 100) on SQLite, and the time per POST (issue #42; docs/benchmarks.md).
bench-receipts: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/receipts.sh

# /healthz and a device lookup alone, then during four clients registering 60-user Easemob
# batches (PBKDF2 on the compute pool; issue #33).
bench-cpu: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/cpu-isolation.sh

# Resident memory over 100,000 mixed requests across every API family, bad input included
# (issue #33 item 9; docs/benchmarks.md).
bench-memory: release
	$(call apt_install,$(BENCH_PACKAGES))
	bench/memory.sh

clean:
	rm -rf .build $(TEST_OUTPUT)
