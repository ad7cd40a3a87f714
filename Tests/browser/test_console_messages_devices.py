"""An operator's first day, round two (#41): the console's message and device pages.

- item 8: a push to an audience no device is in says so — the admin API answers the native
  API's `audience_empty` warning, the console says "no device matched".
- item 9: a message shows each service's own body (FCM, Huawei, Honor, Xiaomi, OPPO, vivo,
  HarmonyOS, APNs), rendered by the server through each transport; the test-push preview shows
  the body for the chosen token's service.
- item 10: errors carry a code the console words in English and Chinese; no answer names a
  Swift type (`CryptoError.wrongKind`).
- item 11: a scheduled message says when it will be sent and can be cancelled from the console
  (and the admin API).
- item 13: the Devices page changes a device's user (or detaches it), adds and removes tags and
  deletes a device, by the native API's rules.
- item 15: at 390 px the Recent messages and Devices tables show whole tokens and one-line times,
  at 1400 px too, in English and Chinese.

Devices are registered through the native API, as apps register them.
"""

import base64
import json
import os
import re
import signal
import subprocess
import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from conftest import ADMIN_PASSWORD, REPO, AdminClient, find_binary, free_port, make_driver, screenshot
from test_console import text_in, visible, wait

IPHONE = "7b" + "0" * 61 + "3"
DEVICES = {
    "apns": (IPHONE, {"environment": "sandbox", "tags": ["day2"]}),
    "fcm": ("day2-fcm:APA91b-phone", {"channel": "fcm", "tags": ["day2"], "user": "u-fcm"}),
    "huawei": ("day2-huawei-token-1", {"channel": "huawei", "tags": ["day2"]}),
    "honor": ("day2-honor-token-1", {"channel": "honor", "tags": ["day2"]}),
    "xiaomi": ("day2-xiaomi-regid-1", {"channel": "xiaomi", "tags": ["day2"]}),
    "oppo": ("day2-oppo-regid-1", {"channel": "oppo", "tags": ["day2"]}),
    "vivo": ("day2-vivo-regid-1", {"channel": "vivo", "tags": ["day2"]}),
    "harmony": ("day2-harmony-token_1", {"channel": "harmony", "tags": ["day2"]}),
}
# What only each service's own body has: no two services' bodies look alike.
MARKERS = {
    "apns": '"aps"',
    "fcm": '"priority"',
    "huawei": '"validate_only"',
    "honor": '"importance"',
    "xiaomi": "restricted_package_name",
    "oppo": "target_value",
    "vivo": '"regId"',
    "harmony": '"actionType"',
}
SWIFT_TYPE_NAME = re.compile(r"\b[A-Z][A-Za-z0-9]*(Error|Refusal)\.[a-zA-Z]")


@pytest.fixture(scope="module")
def admin(gateway):
    client = AdminClient(gateway)
    assert client.login()[0] == 200
    return client


@pytest.fixture(scope="module")
def app(gateway, admin):
    status, data, _ = admin.call("POST", "/apps", {"name": "第二天 Day two", "bundle_id": "com.example.daytwo"})
    assert status == 201, data
    app = {"id": data["app"]["id"], "name": "第二天 Day two", "api_key": data["api_key"]}
    for token, body in DEVICES.values():
        status, _, text = native(gateway, app, "PUT", f"/api/v1/devices/{token}", body)
        assert status == 201, text
    return app


def native(gateway, app, method, path, body=None):
    return gateway.request(method, path, body=body, headers={"Authorization": f"Bearer {app['api_key']}"})


@pytest.fixture(scope="module")
def drivers():
    """Both widths the issue names, each its own Chromium (the session's is 1280 px)."""
    made = {}

    def driver(width):
        if width not in made:
            made[width] = make_driver(width, 900 if width > 500 else 844)
        return made[width]

    yield driver
    for d in made.values():
        d.quit()


def open_page(driver, gateway, app, route, language="en"):
    """Logs in if needed, picks `app` and the language, and opens `route`."""
    driver.get(f"{gateway.base}/#/monitor")
    driver.execute_script(
        "localStorage.setItem('tuisong.lang', arguments[0]); localStorage.setItem('tuisong.app', arguments[1]);",
        language, str(app["id"]))
    driver.get(f"{gateway.base}/#/{route}")
    driver.refresh()

    def ready(d):
        logins = d.find_elements(By.ID, "login-password")
        if logins and logins[0].is_displayed():
            return "login"
        return d.find_element(By.ID, "main").get_attribute("data-route") == route

    if wait(driver).until(ready) == "login":
        driver.find_element(By.ID, "login-password").send_keys(ADMIN_PASSWORD, Keys.ENTER)
        visible(driver, "#topbar")
        driver.get(f"{gateway.base}/#/{route}")
        wait(driver).until(lambda d: d.find_element(By.ID, "main").get_attribute("data-route") == route)
    picker = Select(driver.find_element(By.ID, "app-picker"))
    if picker.first_selected_option.get_attribute("value") != str(app["id"]):
        picker.select_by_value(str(app["id"]))
    visible(driver, "main h1")
    assert driver.execute_script("return document.documentElement.lang") == ("zh-CN" if language == "zh" else "en")


def confirm(driver):
    dialog = visible(driver, "dialog.confirm")
    dialog.find_element(By.CSS_SELECTOR, "button.danger").click()


# item 8


def test_admin_api_warns_when_no_device_matches(admin, app):
    status, data, _ = admin.call("POST", f"/apps/{app['id']}/push", {
        "audience": {"tag": "nobody-has-this"}, "notification": {"alert": {"body": "to no one"}}})
    assert status == 202, data
    assert data["warnings"] == ["audience_empty"]
    status, data, _ = admin.call("POST", f"/apps/{app['id']}/push", {
        "audience": {"token": DEVICES["fcm"][0]}, "notification": {"alert": {"body": "to one"}}})
    assert status == 202, data
    assert "warnings" not in data, data


@pytest.mark.parametrize("language,words", [("en", "No device matched"), ("zh", "没有匹配的设备")])
def test_console_says_no_device_matched(drivers, gateway, app, language, words):
    driver = drivers(1400)
    open_page(driver, gateway, app, "push", language)
    driver.find_element(By.ID, "audience-tag").click()
    driver.find_element(By.ID, "push-tag").send_keys("nobody-has-this")
    driver.find_element(By.ID, "push-body").send_keys("to no one")
    driver.find_element(By.ID, "push-send").click()
    banner = visible(driver, "#follow-empty", timeout=30)
    assert words in banner.text
    text_in(driver, "#notices", words)
    # Said again when the page is opened later, not only right after sending.
    message_id = driver.find_element(By.CSS_SELECTOR, "main h1").text.split("#")[1]
    open_page(driver, gateway, app, f"push/{message_id}", language)
    assert words in visible(driver, "#follow-empty", timeout=30).text
    screenshot(driver, f"day2-empty-audience-{language}")


# item 9


def test_a_message_shows_each_services_own_body(drivers, gateway, admin, app):
    status, data, _ = admin.call("POST", f"/apps/{app['id']}/push", {
        "audience": {"tag": "day2"}, "environment": "sandbox",
        "notification": {"alert": {"title": "订单", "body": "已发货"}, "custom": {"order": 17}}})
    assert status == 202, data
    message_id = data["message_id"]
    wait_until_done(admin, message_id)
    status, bodies, _ = admin.call("GET", f"/messages/{message_id}/bodies")
    assert status == 200, bodies
    by_channel = {s["channel"]: s for s in bodies["services"]}
    assert set(by_channel) == set(MARKERS)
    for channel, marker in MARKERS.items():
        body = by_channel[channel]["body"]
        assert marker in body, (channel, body)
        assert channel == "apns" or '"aps"' not in body, (channel, body)
        assert channel == "huawei" or '"urgency"' not in body, (channel, body)
        assert "已发货" in body or "\\u5df2" in body, (channel, body)
        assert by_channel[channel]["used"], channel

    driver = drivers(1400)
    open_page(driver, gateway, app, f"push/{message_id}")
    select = Select(visible(driver, "#follow-service"))
    names = [o.text for o in select.options]
    for name in ("APNs", "FCM", "Huawei", "Honor", "Xiaomi", "OPPO", "vivo", "HarmonyOS"):
        assert any(n.startswith(name) for n in names), names
    for channel, marker in MARKERS.items():
        select.select_by_value(channel)
        wait(driver).until(lambda d: d.find_element(By.ID, "follow-body").get_attribute("data-channel") == channel)
        assert marker in driver.find_element(By.ID, "follow-body").text, channel
    select.select_by_value("vivo")
    screenshot(driver, "day2-message-bodies")


def test_an_fcm_only_message_shows_the_fcm_body_first(drivers, gateway, admin, app):
    status, data, _ = admin.call("POST", f"/apps/{app['id']}/push", {
        "audience": {"token": DEVICES["fcm"][0]}, "notification": {"alert": {"body": "only FCM"}}})
    assert status == 202, data
    message_id = data["message_id"]
    wait_until_done(admin, message_id)
    status, bodies, _ = admin.call("GET", f"/messages/{message_id}/bodies")
    assert bodies["services"][0]["channel"] == "fcm" and bodies["services"][0]["used"], bodies
    assert not any(s["used"] for s in bodies["services"][1:])
    driver = drivers(1400)
    open_page(driver, gateway, app, f"push/{message_id}")
    body = visible(driver, "#follow-body")
    wait(driver).until(lambda d: d.find_element(By.ID, "follow-body").get_attribute("data-channel") == "fcm")
    assert '"priority"' in body.text and '"aps"' not in body.text


def wait_until_done(admin, message_id, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, data, _ = admin.call("GET", f"/messages/{message_id}")
        if data["state"] in ("completed", "cancelled"):
            return data
        time.sleep(0.2)
    pytest.fail(f"message {message_id} did not finish: {data}")


@pytest.mark.parametrize("channel", ["fcm", "huawei", "harmony", "xiaomi", "apns"])
def test_the_test_push_preview_shows_the_tokens_service(drivers, gateway, app, channel):
    driver = drivers(1400)
    open_page(driver, gateway, app, f"push/device/{DEVICES[channel][0]}")
    driver.find_element(By.ID, "push-title").send_keys("预览")
    driver.find_element(By.ID, "push-body").send_keys("preview body")
    wait(driver).until(lambda d: d.find_element(By.ID, "service-body").get_attribute("data-channel") == channel
                       and "preview body" in d.find_element(By.ID, "service-body").text)
    body = driver.find_element(By.ID, "service-body").text
    assert MARKERS[channel] in body and "preview body" in body, body
    if channel != "apns":
        assert '"aps"' not in body
        # No APNs payload beside it: the device is not an iPhone.
        assert not driver.find_element(By.ID, "payload-preview").is_displayed()
    else:
        assert driver.find_element(By.ID, "payload-preview").is_displayed()
    assert len(Select(driver.find_element(By.ID, "push-service")).options) == 1
    screenshot(driver, f"day2-preview-{channel}")


# item 11


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_scheduled_message_says_when_and_can_be_cancelled(drivers, gateway, admin, app, language):
    send_at = int(time.time()) + 3600
    status, _, text = native(gateway, app, "POST", "/api/v1/push", {
        "audience": {"tag": "day2"}, "send_at": send_at, "notification": {"alert": {"body": "later"}}})
    assert status == 202, text
    message_id = json.loads(text)["message_id"]
    driver = drivers(390 if language == "zh" else 1400)
    open_page(driver, gateway, app, f"push/{message_id}", language)
    line = visible(driver, "#follow-scheduled")
    expected_time = driver.execute_script(
        "return new Date(arguments[0] * 1000).toLocaleString(document.documentElement.lang, "
        "{year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit'})",
        send_at)
    assert expected_time in line.text, (expected_time, line.text)
    assert ("Scheduled" if language == "en" else "定时消息") in line.text
    screenshot(driver, f"day2-scheduled-{language}")
    driver.find_element(By.ID, "follow-cancel").click()
    confirm(driver)
    wait(driver, 30).until(lambda d: d.find_element(By.ID, "follow-status").get_attribute("data-state") == "cancelled")
    assert not driver.find_elements(By.ID, "follow-cancel")
    status, _, text = native(gateway, app, "GET", f"/api/v1/messages/{message_id}")
    assert json.loads(text)["state"] == "cancelled"


def test_the_admin_api_cancels_only_what_has_not_started(admin, app, gateway):
    status, _, text = native(gateway, app, "POST", "/api/v1/push", {
        "audience": {"tag": "day2"}, "send_at": int(time.time()) + 3600, "notification": {"alert": {"body": "later"}}})
    message_id = json.loads(text)["message_id"]
    status, data, _ = admin.call("DELETE", f"/messages/{message_id}")
    assert status == 200 and data["state"] == "cancelled", data
    status, data, _ = admin.call("DELETE", f"/messages/{message_id}")
    assert status == 409 and data["error"]["code"] == "not_scheduled", data
    status, data, _ = admin.call("DELETE", "/messages/999999")
    assert status == 404, data
    status, data, _ = admin.call("DELETE", f"/messages/{message_id}", csrf=False)
    assert status == 403, data


# item 13


def test_the_devices_page_changes_user_and_tags_and_deletes(drivers, gateway, admin, app):
    token = DEVICES["huawei"][0]
    driver = drivers(1400)
    open_page(driver, gateway, app, f"devices/{token}")
    user = visible(driver, "#device-user")
    user.send_keys("u-2001")
    driver.find_element(By.ID, "device-user-save").click()
    text_in(driver, "#device-details", "u-2001")
    assert json.loads(native(gateway, app, "GET", f"/api/v1/devices/{token}")[2])["user"] == "u-2001"
    # Detached, as the native API's "user": null.
    visible(driver, "#device-user-detach").click()
    wait(driver).until(lambda d: not d.find_elements(By.ID, "device-user-detach"))
    assert json.loads(native(gateway, app, "GET", f"/api/v1/devices/{token}")[2])["user"] is None

    visible(driver, "#device-tag-new").send_keys("测试机")
    driver.find_element(By.ID, "device-tag-add").click()
    visible(driver, "#device-tags [data-tag='测试机']")
    tags = json.loads(native(gateway, app, "GET", f"/api/v1/devices/{token}/tags")[2])["tags"]
    assert "测试机" in tags and "day2" in tags
    screenshot(driver, "day2-device-edit")
    driver.find_element(By.CSS_SELECTOR, "#device-tags [data-tag='day2'] button.tag-remove").click()
    wait(driver).until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#device-tags [data-tag='day2']"))
    tags = json.loads(native(gateway, app, "GET", f"/api/v1/devices/{token}/tags")[2])["tags"]
    assert tags == ["测试机"]

    # A tag the rules refuse is refused in the console's words.
    visible(driver, "#device-tag-new").send_keys("no spaces allowed")
    driver.find_element(By.ID, "device-tag-add").click()
    assert "A tag is 1–128" in visible(driver, "#device-tag-new-error").text

    visible(driver, "#device-delete").click()
    confirm(driver)
    wait(driver).until(lambda d: d.find_element(By.ID, "main").get_attribute("data-route") == "devices"
                       and d.find_elements(By.ID, "device-results"))
    assert native(gateway, app, "GET", f"/api/v1/devices/{token}")[0] == 404
    status, _, text = native(gateway, app, "PUT", f"/api/v1/devices/{token}", DEVICES["huawei"][1])
    assert status == 201, text


def test_the_admin_device_routes_keep_the_native_rules(admin, app):
    token = DEVICES["xiaomi"][0]
    base = f"/apps/{app['id']}/devices/{token}"
    status, data, _ = admin.call("PATCH", base, {"user": ""})
    assert status == 400 and data["error"]["code"] == "invalid_user", data
    status, data, _ = admin.call("PATCH", base, {"user": "u-7"})
    assert status == 200 and data["user"] == "u-7", data
    status, data, _ = admin.call("PATCH", base, {"user": None})
    assert status == 200 and data["user"] is None, data
    status, data, _ = admin.call("PATCH", base, {"locale": "zh-CN"})
    assert status == 400, data
    status, data, _ = admin.call("PUT", base + "/tags/bad%20tag")
    assert status == 400 and data["error"]["code"] == "invalid_tag", data
    status, data, _ = admin.call("DELETE", base + "/tags/never-had")
    assert status == 404 and data["error"]["code"] == "tag_not_found", data
    status, data, _ = admin.call("PUT", f"/apps/{app['id']}/devices/unknown-token-9/tags/x")
    assert status == 404, data
    status, data, _ = admin.call("DELETE", f"/apps/{app['id']}/devices/unknown-token-9")
    assert status == 404, data


@pytest.mark.parametrize("language,words", [
    ("en", "A tag is 1–128 letters"), ("zh", "标签为 1–128 个字母")])
def test_rule_errors_are_worded_in_the_consoles_language(drivers, gateway, app, language, words):
    driver = drivers(1400)
    open_page(driver, gateway, app, "devices", language)
    Select(driver.find_element(By.ID, "device-by")).select_by_value("tag")
    driver.find_element(By.ID, "device-q").send_keys("not a tag!", Keys.ENTER)
    banner = visible(driver, "#device-results .banner")
    assert words in banner.text, banner.text
    if language == "zh":
        assert not re.search(r"[A-Za-z]{4,}", banner.text.replace("CJK", "")), banner.text
    open_page(driver, gateway, app, "push", language)
    driver.find_element(By.ID, "push-token").send_keys("not a token!")
    driver.find_element(By.ID, "push-body").send_keys("x")
    driver.find_element(By.ID, "push-send").click()
    error = visible(driver, "#push-token-error")
    assert ("device token is 64–200" if language == "en" else "设备 Token 为") in error.text


# item 10


@pytest.mark.parametrize("language,words", [("en", "is already named “第二天 Day two”"), ("zh", "已使用名称“第二天 Day two”")])
def test_a_taken_app_name_is_worded_in_the_consoles_language(drivers, gateway, app, language, words):
    driver = drivers(1400)
    open_page(driver, gateway, app, "apps", language)
    driver.find_element(By.ID, "new-app-name").send_keys("第二天 Day two")
    driver.find_element(By.ID, "new-app-bundle").send_keys("com.example.daytwo")
    driver.find_element(By.ID, "new-app-submit").click()
    error = visible(driver, "#new-app-name-error")
    assert words in error.text and "com.example.daytwo" in error.text, error.text
    if language == "zh":
        assert "give this one" not in error.text


def test_every_credential_fields_help_is_given_in_chinese(admin):
    """The Huawei, Honor, OPPO, vivo (…) field hints the console shows come from the
    transports' declarations: each in English and in Chinese."""
    status, session, _ = admin.call("GET", "/session")
    assert status == 200
    forms = session["features"]["transports"]
    assert {f["channel"] for f in forms} >= {"fcm", "huawei", "honor", "xiaomi", "oppo", "vivo", "harmony"}
    for form in forms:
        for spec in form["fields"]:
            help_text = spec["help_text"]
            assert help_text["en"] == spec["help"], spec
            assert re.search(r"[\u4e00-\u9fff]", help_text["zh"]), (form["channel"], spec)


def test_no_answer_names_a_swift_type(gateway, admin, app):
    """Bad uploads and bad requests of every kind the console sends: no answer says
    `CryptoError.wrongKind` or any other Swift type's name."""
    not_a_key = base64.b64encode(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").decode()
    garbage = base64.b64encode(b"\x00\x01garbage" * 20).decode()
    calls = [
        ("POST", f"/apps/{app['id']}/credentials",
         {"kind": "p8", "environment": "sandbox", "file": not_a_key, "key_id": "ABC123DEFG", "team_id": "TEAM123456"}),
        ("POST", f"/apps/{app['id']}/credentials", {"kind": "p12", "environment": "sandbox", "file": garbage, "password": "x"}),
        ("POST", f"/apps/{app['id']}/credentials", {"kind": "pem", "environment": "sandbox", "file": garbage}),
        ("POST", f"/apps/{app['id']}/credentials", {"kind": "pem", "environment": "sandbox", "file": not_a_key}),
        ("POST", f"/apps/{app['id']}/channel-credentials", {"channel": "fcm", "file": garbage}),
        ("POST", f"/apps/{app['id']}/channel-credentials", {"channel": "harmony", "file": garbage}),
        ("POST", f"/apps/{app['id']}/channel-credentials",
         {"channel": "huawei", "vendor_app_id": "0x", "client_id": "a b", "client_secret": "s"}),
        ("POST", f"/apps/{app['id']}/push", {"audience": {"token": "not a token!"}, "notification": {}}),
        ("POST", f"/apps/{app['id']}/push/preview", {"audience": {"all": True}, "notification": {"badge": -1}}),
        ("GET", f"/apps/{app['id']}/devices?by=tag&q=bad%20tag", None),
        ("PATCH", f"/apps/{app['id']}/devices/{IPHONE}", {"user": 7}),
        ("PUT", f"/apps/{app['id']}/devices/{IPHONE}/tags/%F0%9F%98%80%20x", None),
    ]
    answers = []
    for method, path, body in calls:
        status, data, _ = admin.call(method, path, body)
        assert status >= 400, (path, data)
        answers.append(json.dumps(data, ensure_ascii=False))
    for body in ('{"audience": {"all": true}, "notification": {"alert": 5}}', '{"audience": ', '[]'):
        status, _, text = gateway.request(
            "POST", "/api/v1/push", raw=body.encode(),
            headers={"Authorization": f"Bearer {app['api_key']}", "Content-Type": "application/json"})
        answers.append(text)
    for body in ({"channel": "nope"}, {"channel": "fcm", "user": 5}, {"channel": "fcm", "tags": "a"},
                 {"channel": "fcm", "environment": ["sandbox"]}):
        status, _, text = native(gateway, app, "PUT", "/api/v1/devices/zz", body)
        assert status == 400, text
        answers.append(text)
    status, _, text = gateway.request(
        "PUT", "/api/v1/devices/zz", raw=b'{"channel": "fcm",', headers={
            "Authorization": f"Bearer {app['api_key']}", "Content-Type": "application/json"})
    answers.append(text)
    for answer in answers:
        assert not SWIFT_TYPE_NAME.search(answer), answer
        assert "Swift." not in answer and "Foundation." not in answer, answer


# item 15


def overflow_report(driver, table_css):
    """What of a table is cut off: cells wider than the viewport or their table's box, and
    time cells broken over two lines."""
    return driver.execute_script("""
        const table = document.querySelector(arguments[0]);
        if (!table) return ['no table ' + arguments[0]];
        const problems = [];
        const width = document.documentElement.clientWidth;
        const wrap = table.closest('.table-wrap') || table.parentElement;
        if (wrap.scrollWidth > wrap.clientWidth + 1) problems.push(`scrolls: ${wrap.scrollWidth} > ${wrap.clientWidth}`);
        for (const cell of table.querySelectorAll('td')) {
          if (cell.offsetParent === null) continue;
          const box = cell.getBoundingClientRect();
          if (box.right > width + 1) problems.push(`cell past the edge: ${cell.textContent}`);
        }
        for (const link of table.querySelectorAll('td.token a')) {
          const box = link.getBoundingClientRect();
          if (box.right > width + 1 || link.scrollWidth > link.clientWidth + 1) problems.push(`token clipped: ${link.textContent}`);
        }
        for (const cell of table.querySelectorAll('td.time')) {
          if (cell.offsetParent === null) { problems.push('time hidden'); continue; }
          const range = document.createRange();
          range.selectNodeContents(cell);
          const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
          if (lines.size > 1) problems.push(`time broken over ${lines.size} lines: ${cell.textContent}`);
        }
        return problems;
    """, table_css)


@pytest.mark.parametrize("width", [1400, 390])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_tables_show_whole_tokens_and_one_line_times(drivers, gateway, admin, app, width, language):
    # A long FCM token, as FCM hands them out (150+ characters).
    long_token = "day2-long:" + "APA91bH" * 22
    status, _, text = native(gateway, app, "PUT", f"/api/v1/devices/{long_token}", {"channel": "fcm", "user": "u-长"})
    assert status in (200, 201), text
    admin.call("POST", f"/apps/{app['id']}/push", {"audience": {"tag": "day2"}, "notification": {"alert": {"body": "x"}}})
    driver = drivers(width)
    open_page(driver, gateway, app, "devices", language)
    visible(driver, f"#devices-table tr[data-token='{long_token}']")
    assert overflow_report(driver, "#devices-table") == []
    screenshot(driver, f"day2-devices-{width}-{language}")
    open_page(driver, gateway, app, "monitor", language)
    visible(driver, "#recent-table tbody tr")
    assert overflow_report(driver, "#recent-table") == []
    screenshot(driver, f"day2-recent-{width}-{language}")


# item 15: the start banner


def test_the_start_banner_names_the_config_file_once(tmp_path):
    """`config: /path/to/tuisong.json`, not `config: config /path/…`."""
    config = tmp_path / "tuisong.json"
    config.write_text((REPO / "config" / "tuisong.json").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUISONG_")}
    env.update({
        "TUISONG_LISTEN_PORT": str(free_port()), "TUISONG_LISTEN_HOST": "127.0.0.1",
        "TUISONG_DATABASE_PATH": str(tmp_path / "tuisong.db"),
        "TUISONG_SECURITY_MASTER_KEY_FILE": str(tmp_path / "master.key"),
        "TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE": str(tmp_path / "admin-password"),
        "TUISONG_WEB_ROOT": str(REPO / "web"), "TUISONG_ADMIN_PASSWORD": ADMIN_PASSWORD,
    })
    process = subprocess.Popen(
        [str(find_binary()), "serve", "--config", str(config)], cwd=tmp_path, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    lines = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
            if line.startswith("  console:"):
                break
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
    config_lines = [line for line in lines if line.startswith("  config:")]
    assert config_lines == [f"  config: {config}"], lines
