"""Fixtures for the console tests: a real `tuisong serve` on a free loopback port with its own
temporary database, and a headless Chromium driven through chromedriver.

Everything is bounded: the server must answer /healthz within 60 s, every HTTP call and page
wait has a timeout, and the server is stopped (SIGTERM, then SIGKILL) when the session ends.
"""

import atexit
import ctypes
import http.cookiejar
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
OUTPUT = pathlib.Path(os.environ.get("TEST_OUTPUT", REPO / "test-output")) / "browser"
ADMIN_PASSWORD = "console-test-密码-7f3a"


def _die_with_parent():
    """Runs in the server's child process before exec: if pytest dies, even by SIGKILL (the
    Makefile's `timeout`), the kernel kills the server too (PR_SET_PDEATHSIG = 1)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def _interrupt_on_sigterm(signum, frame):
    # `timeout` sends SIGTERM first: unwind like Ctrl-C so fixtures stop what they started.
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
_running = []
atexit.register(lambda: [gateway.stop() for gateway in list(_running)])


def find_binary():
    explicit = os.environ.get("TUISONG_BIN")
    if explicit:
        return pathlib.Path(explicit)
    candidates = [REPO / ".build" / "release" / "tuisong", REPO / ".build" / "debug" / "tuisong"]
    existing = [c for c in candidates if c.exists()]
    if not existing:
        pytest.fail("no tuisong binary: run `swift build -c release` (or set TUISONG_BIN)")
    # The newest build is the one that matches the sources being tested.
    return max(existing, key=lambda c: c.stat().st_mtime)


def find_test_transports_binary():
    """`tuisong` with the transports kept in the tests registered too (Echo): built beside
    `tuisong` by `swift build --build-tests` (or `--product tuisong-with-test-transports`)."""
    explicit = os.environ.get("TUISONG_TEST_TRANSPORTS_BIN")
    binary = pathlib.Path(explicit) if explicit else REPO / ".build" / "debug" / "tuisong-with-test-transports"
    if not binary.exists():
        pytest.fail(f"no {binary}: run `swift build --product tuisong-with-test-transports`")
    return binary


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gateway:
    """A running `tuisong serve` (or `binary serve`) and a small HTTP client for its APIs."""

    def __init__(self, directory, name="server", binary=None):
        self.directory = pathlib.Path(directory)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        OUTPUT.mkdir(parents=True, exist_ok=True)
        self.log_path = OUTPUT / f"{name}.log"
        env = {
            k: v for k, v in os.environ.items()
            if not k.startswith("TUISONG_") or k == "TUISONG_BIN"
        }
        env.update({
            "TUISONG_LISTEN_PORT": str(self.port),
            "TUISONG_LISTEN_HOST": "127.0.0.1",
            "TUISONG_DATABASE_PATH": str(self.directory / "tuisong.db"),
            "TUISONG_SECURITY_MASTER_KEY_FILE": str(self.directory / "master.key"),
            "TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE": str(self.directory / "admin-password"),
            "TUISONG_WEB_ROOT": str(REPO / "web"),
            "TUISONG_ADMIN_PASSWORD": ADMIN_PASSWORD,
            "TUISONG_LOG_LEVEL": "info",
        })
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [str(binary or find_binary()), "serve"],
            cwd=self.directory, env=env, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent)
        _running.append(self)
        self.wait_ready()

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"tuisong serve exited with {self.process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        pytest.fail(f"tuisong serve did not answer /healthz within {timeout} s; see {self.log_path}")

    def stop(self):
        if self in _running:
            _running.remove(self)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        if not self.log.closed:
            self.log.close()

    def request(self, method, path, body=None, headers=None, opener=None, raw=None):
        """Returns (status, headers, text). Never raises for an HTTP status."""
        data = None
        all_headers = dict(headers or {})
        if body is not None:
            data = json.dumps(body).encode()
            all_headers.setdefault("Content-Type", "application/json")
        if raw is not None:
            data = raw
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=all_headers)
        try:
            response = (opener or urllib.request.build_opener()).open(request, timeout=20)
            with response:
                return response.status, response.headers, response.read().decode()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.headers, error.read().decode()


class AdminClient:
    """The admin API with a cookie jar and the CSRF token, as the console uses it."""

    def __init__(self, gateway):
        self.gateway = gateway
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.csrf = None
        self.transcript = []

    def call(self, method, path, body=None, csrf=True, headers=None):
        all_headers = dict(headers or {})
        if csrf and self.csrf and method != "GET":
            all_headers["X-CSRF-Token"] = self.csrf
        status, response_headers, text = self.gateway.request(
            method, "/admin/api" + path, body=body, headers=all_headers, opener=self.opener)
        self.transcript.append((method, path, status, dict(response_headers), text))
        data = json.loads(text) if text else None
        return status, data, response_headers

    def login(self, password=ADMIN_PASSWORD):
        status, data, headers = self.call("POST", "/login", {"password": password}, csrf=False)
        if status == 200:
            self.csrf = data["csrf_token"]
        return status, data, headers


@pytest.fixture(scope="module")
def gateway(request):
    """One server per test module, so modules do not see each other's apps."""
    directory = tempfile.mkdtemp(prefix="tuisong-browser-")
    gw = Gateway(directory, name=f"server-{request.module.__name__}")
    yield gw
    gw.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture()
def admin(gateway):
    client = AdminClient(gateway)
    status, _, _ = client.login()
    assert status == 200
    return client


def make_driver(width, height):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        f"--window-size={width},{height}", "--lang=en-US", "--no-first-run",
        "--disable-extensions", "--disable-background-networking",
    ):
        options.add_argument(argument)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    if width < 500:
        # Chromium keeps a window at least 500 px wide; a phone's width is emulated instead.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})
    return driver


@pytest.fixture(scope="session")
def browser():
    driver = make_driver(1280, 900)
    yield driver
    driver.quit()


def screenshot(driver, name):
    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / f"{name}.png"
    # The whole page, not just the window: resize to the document's height first.
    width = driver.execute_script("return window.innerWidth")
    height = driver.execute_script(
        "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    height = min(max(height, 600), 4000)
    # Emulate a viewport as tall as the page, take it, and go back to the real window.
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500})
    time.sleep(0.2)
    driver.save_screenshot(str(path))
    if width < 500:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": 844, "deviceScaleFactor": 1, "mobile": True})
    else:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return path
