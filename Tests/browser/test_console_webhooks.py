"""The console's webhooks pages (#43): an app's endpoints with their state, adding one (the
`whsec_` secret shown once), a test event that a real receiver on loopback gets and the
endpoint's page then lists with status 200, its latency and the first bytes of the answer, a
resend with the same webhook-id, editing the events, rotating the secret, an endpoint disabled
by a 410 Gone shown with its reason and enabled again, and deleting one — at 1400 px and on a
390 px phone, in English and in Chinese.

The receiver is Python's http.server on 127.0.0.1; the gateway's local-mode default
(`webhooks.allow_private_networks` true) lets an endpoint point there. Every event the receiver
gets is checked against the secret the console showed (HMAC-SHA256, written here apart from
the gateway's signer).
"""

import base64
import hashlib
import hmac
import http.server
import json
import threading
import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import ADMIN_PASSWORD, AdminClient, make_driver, screenshot
from test_console import go, text_in, visible, wait
from test_console_android import choose_app, unexpected_errors

RECEIVER_ANSWER = "received by the test app server, thanks"


class Receiver:
    """An app server on loopback: answers 200 with RECEIVER_ANSWER on /hooks and 410 Gone on
    /gone, and keeps every request it got (path, headers, body)."""

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status, answer = (410, b"gone for good") if self.path == "/gone" else (200, RECEIVER_ANSWER.encode())
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def received(self, path):
        with self.lock:
            return [r for r in self.requests if r[0] == path]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def verified(secret, headers, body):
    """The Standard Webhooks signature check, as an app server would write it."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(hmac.compare_digest(expected, part.split(",", 1)[1]) for part in headers["webhook-signature"].split())


def until(condition, timeout=30, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def receiver():
    server = Receiver()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def app(gateway):
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("POST", "/apps", {"name": "钩子 Hooks", "bundle_id": "com.example.hooks"})
    assert status == 201, data
    return {"id": data["app"]["id"], "name": "钩子 Hooks"}


@pytest.fixture(scope="module")
def wide():
    driver = make_driver(1400, 900)
    yield driver
    driver.quit()


shared = {}


def test_add_an_endpoint_send_a_test_event_and_see_its_attempt(wide, gateway, app, receiver):
    choose_app(wide, gateway, "webhooks", app)
    text_in(wide, "#webhook-list", "No endpoint yet")
    url = receiver.base + "/hooks"
    visible(wide, "#new-webhook-url").send_keys(url)
    wide.find_element(By.ID, "new-webhook-description").send_keys("订单服务 orders")
    wide.find_element(By.ID, "new-webhook-events-delivery-failed").click()
    wide.find_element(By.ID, "new-webhook-submit").click()

    secret = visible(wide, "#webhook-secret-value").text
    assert secret.startswith("whsec_") and len(secret) > 30, secret
    assert "not shown again" in wide.find_element(By.ID, "new-webhook-secret").text
    row = visible(wide, "#webhooks-table tbody tr")
    assert url in row.text and "Enabled" in row.text and "订单服务 orders" in row.text
    assert "delivery.failed" in row.text and "message.completed" in row.text
    screenshot(wide, "webhooks-01-added")

    wide.find_element(By.ID, "webhook-secret-open").click()
    text_in(wide, "#webhook-url", url)
    endpoint_id = int(wide.find_element(By.ID, "main").get_attribute("data-route").split("/")[1])
    # The secret is in the create answer only: the endpoint's page never shows it.
    assert secret not in wide.find_element(By.ID, "main").text
    text_in(wide, "#webhook-attempts", "No attempt yet")

    wide.find_element(By.ID, "webhook-test").click()
    attempt = visible(wide, "#attempts-table tr[data-status='200']", timeout=30)
    assert "webhook.test" in attempt.text
    assert RECEIVER_ANSWER in attempt.find_element(By.CSS_SELECTOR, ".hook-response").text
    assert attempt.find_element(By.CSS_SELECTOR, ".hook-latency").text.endswith(" ms")
    event_id = attempt.get_attribute("data-event")
    assert event_id in attempt.text

    (path, headers, body), = receiver.received("/hooks")
    assert headers["webhook-id"] == event_id
    assert verified(secret, headers, body), "the event is signed with the secret the console showed"
    assert json.loads(body)["type"] == "webhook.test"
    screenshot(wide, "webhooks-02-attempt")

    # Resend: the same event again, with its webhook-id, listed as a second attempt.
    attempt.find_element(By.CSS_SELECTOR, ".hook-resend").click()
    until(lambda: len(receiver.received("/hooks")) == 2, what="the resent event")
    assert receiver.received("/hooks")[1][1]["webhook-id"] == event_id
    wait(wide, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, f"#attempts-table tr[data-event='{event_id}']")) == 2)
    shared.update(endpoint_id=endpoint_id, secret=secret, event_id=event_id)
    assert unexpected_errors(wide) == []


def test_edit_events_and_rotate_the_secret(wide, gateway, app, receiver):
    endpoint_id = shared["endpoint_id"]
    go(wide, gateway, f"webhooks/{endpoint_id}")
    wide.find_element(By.ID, "webhook-events-device-invalidated").click()
    description = wide.find_element(By.ID, "webhook-description")
    description.clear()
    description.send_keys("changed here")
    wide.find_element(By.ID, "webhook-save").click()
    text_in(wide, "#webhook-details", "changed here")
    assert "device.invalidated" not in wide.find_element(By.ID, "webhook-details").text

    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("GET", f"/apps/{app['id']}/webhooks/{endpoint_id}")
    assert status == 200 and "device.invalidated" not in data["events"] and data["description"] == "changed here"

    wide.find_element(By.ID, "webhook-rotate").click()
    visible(wide, "dialog.confirm button.danger").click()
    new_secret = visible(wide, "#webhook-secret-value").text
    assert new_secret.startswith("whsec_") and new_secret != shared["secret"]
    text_in(wide, "#webhook-details", "Old secret signs until")
    screenshot(wide, "webhooks-03-rotated")

    # The next event carries both signatures during the overlap: each secret verifies it.
    before = len(receiver.received("/hooks"))
    wide.find_element(By.ID, "webhook-test").click()
    until(lambda: len(receiver.received("/hooks")) > before, what="the test event after rotating")
    _, headers, body = receiver.received("/hooks")[-1]
    assert verified(new_secret, headers, body) and verified(shared["secret"], headers, body)
    assert unexpected_errors(wide) == []


def test_an_endpoint_disabled_by_410_shows_why_and_is_enabled_again_then_deleted(wide, gateway, app, receiver):
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, gone, _ = admin.call("POST", f"/apps/{app['id']}/webhooks", {"url": receiver.base + "/gone"})
    assert status == 201, gone
    assert admin.call("POST", f"/apps/{app['id']}/webhooks/{gone['id']}/test")[0] == 202
    until(lambda: not admin.call("GET", f"/apps/{app['id']}/webhooks/{gone['id']}")[1]["enabled"],
          what="the endpoint disabled by 410")

    go(wide, gateway, "webhooks")
    row = visible(wide, f"#webhooks-table tr[data-webhook='{gone['id']}']")
    assert row.get_attribute("data-enabled") == "false"
    assert "Disabled" in row.text and "410" in row.text, row.text
    screenshot(wide, "webhooks-04-disabled")

    row.find_element(By.CSS_SELECTOR, "a").click()
    banner = visible(wide, "#webhook-disabled")
    assert "410" in banner.text
    visible(wide, "#attempts-table tr[data-status='410']")
    wide.find_element(By.ID, "webhook-enable").click()
    wait(wide).until(lambda d: not d.find_elements(By.ID, "webhook-disabled"))
    text_in(wide, "#webhook-details", "Enabled")
    assert admin.call("GET", f"/apps/{app['id']}/webhooks/{gone['id']}")[1]["enabled"] is True

    wide.find_element(By.ID, "webhook-delete").click()
    visible(wide, "dialog.confirm button.danger").click()
    wait(wide).until(lambda d: d.find_element(By.ID, "main").get_attribute("data-route") == "webhooks")
    visible(wide, "#webhooks-table")
    assert not wide.find_elements(By.CSS_SELECTOR, f"#webhooks-table tr[data-webhook='{gone['id']}']")
    assert admin.call("GET", f"/apps/{app['id']}/webhooks/{gone['id']}")[0] == 404
    assert unexpected_errors(wide) == []


def test_the_chinese_console_says_the_same(wide, gateway, app):
    endpoint_id = shared["endpoint_id"]
    go(wide, gateway, f"webhooks/{endpoint_id}")
    wide.find_element(By.ID, "lang-toggle-top").click()
    try:
        wait(wide).until(lambda d: d.execute_script("return document.documentElement.lang") == "zh-CN")
        text_in(wide, "main", "最近的发送记录")
        row = visible(wide, "#attempts-table tr[data-status='200']")
        assert "重新发送" in row.text and "毫秒" in row.text, row.text
        assert "Webhook" in wide.find_element(By.CSS_SELECTOR, "#sidenav a[data-route='webhooks']").text
        screenshot(wide, "webhooks-05-zh")
        go(wide, gateway, "webhooks")
        row = visible(wide, f"#webhooks-table tr[data-webhook='{endpoint_id}']")
        assert "已启用" in row.text, row.text
        assert "添加接收地址" in wide.find_element(By.ID, "main").text
    finally:
        wide.find_element(By.ID, "lang-toggle-top").click()
        wait(wide).until(lambda d: d.execute_script("return document.documentElement.lang") != "zh-CN")


def test_a_phone_shows_the_pages_without_sideways_scrolling(gateway, app):
    endpoint_id = shared["endpoint_id"]
    driver = make_driver(390, 844)
    try:
        driver.get(gateway.base + "/")
        visible(driver, "#login-password").send_keys(ADMIN_PASSWORD, Keys.ENTER)
        visible(driver, "#topbar")
        choose_app(driver, gateway, "webhooks", app)
        for route in ("webhooks", f"webhooks/{endpoint_id}"):
            go(driver, gateway, route)
            if route != "webhooks":
                row = visible(driver, "#attempts-table tr[data-status='200']")
                assert RECEIVER_ANSWER in row.text, "the answer's first bytes show on a phone too"
            viewport, content = driver.execute_script(
                "const e = document.documentElement; return [e.clientWidth, e.scrollWidth]")
            assert viewport <= 420, f"the phone emulation is in effect ({viewport} px)"
            assert content <= viewport, f"{route} scrolls sideways: {content} px of content in {viewport} px"
            screenshot(driver, "webhooks-narrow-" + route.replace("/", "-"))
        # Chinese on the phone as well.
        driver.find_element(By.ID, "lang-toggle-top").click()
        wait(driver).until(lambda d: d.execute_script("return document.documentElement.lang") == "zh-CN")
        text_in(driver, "main", "最近的发送记录")
        viewport, content = driver.execute_script(
            "const e = document.documentElement; return [e.clientWidth, e.scrollWidth]")
        assert content <= viewport, f"the Chinese page scrolls sideways: {content} px in {viewport} px"
        screenshot(driver, "webhooks-narrow-zh")
        assert unexpected_errors(driver) == []
    finally:
        driver.quit()
