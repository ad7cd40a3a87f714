"""Delivery receipts in the console (#42): the arrival rate per channel on the message page and
the monitor (local mode's Huawei look-alike posts a signed receipt for every phone it accepts;
APNs reports none, so its rate is "—"), in English and Chinese, at 1400 px and at 390 px; and
the app's "Delivery receipts" section: the URL to register, the callback user name and key the
admin API holds, a rotation, the pair set by hand, and the app's own receipts switched on.
"""

import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from conftest import ADMIN_PASSWORD, AdminClient, make_driver, screenshot
from test_console import go, text_in, visible, wait

IPHONE_TOKEN = "c3" + "0" * 61 + "3"
HUAWEI_TOKENS = ["huawei-console-receipt-1", "huawei-console-receipt-2", "huawei-console-receipt-3"]
TAG = "receipts-console"


@pytest.fixture(scope="module")
def wide():
    """The console at 1400 px, logged in on first use."""
    driver = make_driver(1400, 900)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def admin(gateway):
    client = AdminClient(gateway)
    assert client.login()[0] == 200
    return client


@pytest.fixture(scope="module")
def pushed(gateway, admin):
    """An app with an iPhone and three Huawei phones, and a push to them all, every Huawei
    phone's arrival reported by the look-alike."""
    status, data, _ = admin.call("POST", "/apps", {"name": "回执 Console", "bundle_id": "com.example.receipts"})
    assert status == 201, data
    app = {"id": data["app"]["id"], "name": "回执 Console", "api_key": data["api_key"]}
    headers = {"Authorization": f"Bearer {app['api_key']}"}
    for token, body in [(IPHONE_TOKEN, {"environment": "sandbox", "tags": [TAG]})] + [
            (t, {"channel": "huawei", "tags": [TAG]}) for t in HUAWEI_TOKENS]:
        status, _, text = gateway.request("PUT", f"/api/v1/devices/{token}", body=body, headers=headers)
        assert status in (200, 201), text
    status, data, _ = admin.call("POST", f"/apps/{app['id']}/push", {
        "audience": {"tag": TAG}, "notification": {"alert": {"title": "到达率", "body": "arrival"}}})
    assert status == 202, data
    app["message_id"] = data["message_id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, message, _ = admin.call("GET", f"/messages/{app['message_id']}")
        if status == 200 and message["channels"].get("huawei", {}).get("arrived") == 3:
            break
        time.sleep(0.2)
    assert message["channels"]["huawei"]["arrived"] == 3, message
    assert message["counts"]["arrived"] == 3 and message["counts"]["clicked"] == 0
    assert "arrived" not in message["channels"]["apns"], "APNs reports no arrival"
    return app


def set_language(driver, gateway, lang):
    if driver.execute_script("return document.documentElement.lang") != lang:
        driver.find_element(By.ID, "lang-toggle-top").click()
        wait(driver).until(lambda d: d.execute_script("return document.documentElement.lang") == lang)


def arrival_cell(channel):
    return f"#channel-table tr[data-channel='{channel}'] td[data-state='arrival-rate']"


def test_the_arrival_rate_per_channel_on_the_message_page_and_the_monitor(wide, gateway, pushed):
    message_id = pushed["message_id"]
    for lang, header, short in (("en", "Arrival rate", "arrived 100%"), ("zh-CN", "到达率", "到达 100%")):
        go(wide, gateway, f"push/{message_id}")
        set_language(wide, gateway, lang)
        go(wide, gateway, f"push/{message_id}")
        text_in(wide, arrival_cell("huawei"), "100%", timeout=60)
        assert wide.find_element(By.CSS_SELECTOR, arrival_cell("apns")).text == "—"
        row = "#channel-table tr[data-channel='huawei']"
        assert wide.find_element(By.CSS_SELECTOR, f"{row} td[data-state='arrived']").text == "3"
        assert wide.find_element(By.CSS_SELECTOR, f"{row} td[data-state='delivered']").text == "3"
        headers = [th.text for th in wide.find_elements(By.CSS_SELECTOR, "#channel-table thead th")]
        assert header in headers, headers
        screenshot(wide, f"receipts-01-message-{lang}-1400")

        go(wide, gateway, "monitor")
        cell = f"#monitor-recent tr[data-message='{message_id}'] td.channels"
        text_in(wide, f"{cell} [data-channel='huawei'] .arrival-rate", short, timeout=60)
        assert not wide.find_elements(By.CSS_SELECTOR, f"{cell} [data-channel='apns'] .arrival-rate")
        screenshot(wide, f"receipts-02-monitor-{lang}-1400")
    set_language(wide, gateway, "en")


def test_the_app_shows_its_callback_credentials_rotates_and_sets_them(wide, gateway, admin, pushed):
    app_id = pushed["id"]
    status, receipts, _ = admin.call("GET", f"/apps/{app_id}/receipts")
    assert status == 200, receipts
    huawei = next(s for s in receipts["services"] if s["channel"] == "huawei")
    go(wide, gateway, f"apps/{app_id}")
    section = visible(wide, "#app-receipts")
    visible(wide, "#receipt-user-huawei")
    screenshot(wide, "receipts-03-app-1400")
    assert "[object" not in section.text
    assert wide.find_element(By.ID, "receipt-user-huawei").text == huawei["callback_user_name"] == f"tuisong{app_id}"
    assert wide.find_element(By.ID, "receipt-key-huawei").text == huawei["callback_key"]
    assert len(huawei["callback_key"]) == 32
    assert wide.find_element(By.ID, "receipt-url-huawei").text.endswith(f"/receipts/huawei/{app_id}")
    assert wide.find_element(By.ID, "receipt-key-harmony").text not in ("", huawei["callback_key"])

    wide.find_element(By.ID, "receipt-rotate-huawei").click()
    visible(wide, "dialog.confirm button.danger").click()
    wait(wide).until(lambda d: d.find_element(By.ID, "receipt-key-huawei").text != huawei["callback_key"])
    status, after, _ = admin.call("GET", f"/apps/{app_id}/receipts")
    rotated = next(s for s in after["services"] if s["channel"] == "huawei")["callback_key"]
    assert wide.find_element(By.ID, "receipt-key-huawei").text == rotated != huawei["callback_key"]

    section = "#app-receipts .receipt-service[data-channel='huawei']"
    wide.find_element(By.CSS_SELECTOR, f"{section} details summary").click()
    visible(wide, "#receipt-set-user-huawei").send_keys("agc-user")
    wide.find_element(By.ID, "receipt-set-key-huawei").send_keys("typed-into-agc-1")
    wide.find_element(By.CSS_SELECTOR, f"{section} form button[type='submit']").click()
    text_in(wide, "#receipt-key-huawei", "typed-into-agc-1")
    assert wide.find_element(By.ID, "receipt-user-huawei").text == "agc-user"

    own = wide.find_element(By.ID, "app-receipts-own")
    assert not own.is_selected()
    own.click()
    deadline = time.monotonic() + 10
    while admin.call("GET", f"/apps/{app_id}/receipts")[1]["app_receipts"] is not True:
        assert time.monotonic() < deadline, "the app's own receipts were not switched on"
        time.sleep(0.1)
    screenshot(wide, "receipts-04-app-set-1400")


def test_receipts_fit_a_phone_in_both_languages(gateway, pushed):
    driver = make_driver(390, 844)
    try:
        driver.get(gateway.base + "/")
        visible(driver, "#login-password").send_keys(ADMIN_PASSWORD, Keys.ENTER)
        visible(driver, "#topbar")
        for lang in ("en", "zh-CN"):
            for route in (f"push/{pushed['message_id']}", "monitor", f"apps/{pushed['id']}"):
                go(driver, gateway, route)
                set_language(driver, gateway, lang)
                go(driver, gateway, route)
                if route.startswith("push/"):
                    text_in(driver, arrival_cell("huawei"), "100%", timeout=60)
                time.sleep(0.3)
                viewport, content = driver.execute_script(
                    "const e = document.documentElement; return [e.clientWidth, e.scrollWidth]")
                assert viewport <= 420, f"the phone emulation is in effect ({viewport} px)"
                assert content <= viewport, f"{route} ({lang}) scrolls sideways: {content} px in {viewport} px"
                screenshot(driver, f"receipts-narrow-{lang}-" + route.replace("/", "-"))
        set_language(driver, gateway, "en")
    finally:
        driver.quit()
