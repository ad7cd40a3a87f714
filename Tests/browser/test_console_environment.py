"""The environment is every device's (#41, item 1). A test push from the console with
Environment Sandbox to All devices reaches only the sandbox devices — an iPhone, an FCM test
phone and a HarmonyOS test phone — and the follow page counts the production ones (iPhone,
FCM, Huawei, HarmonyOS) skipped as "other_environment", with its meaning, rather than leaving
them out. The devices page shows every device's environment, Android's and HarmonyOS's too,
and the push page's hint says what the server does, in English and in Chinese.

Devices are registered through the native API, as an app would register its test phones.
"""

import json

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from conftest import AdminClient, screenshot
from test_console import go, text_in, visible, wait
from test_console_android import choose_app, unexpected_errors

SANDBOX_IPHONE = "5a" + "0" * 61 + "1"
PRODUCTION_IPHONE = "9c" + "0" * 61 + "2"
SANDBOX_FCM = "env-test-phone:APA91b-sandbox"
PRODUCTION_FCM = "env-customer:APA91b-production"
PRODUCTION_HUAWEI = "env-huawei-production-1"
SANDBOX_HARMONY = "env-harmony-test-phone_1"
PRODUCTION_HARMONY = "env-harmony-production_2"
DEVICES = (
    (SANDBOX_IPHONE, {"environment": "sandbox"}),
    (PRODUCTION_IPHONE, {"environment": "production"}),
    (SANDBOX_FCM, {"channel": "fcm", "environment": "sandbox"}),
    (PRODUCTION_FCM, {"channel": "fcm"}),
    (PRODUCTION_HUAWEI, {"channel": "huawei"}),
    (SANDBOX_HARMONY, {"channel": "harmony", "environment": "sandbox"}),
    (PRODUCTION_HARMONY, {"channel": "harmony"}),
)


@pytest.fixture(scope="module", autouse=True)
def leave_quietly(browser):
    """After the module: off the follow page (it polls) and the console log drained."""
    yield
    browser.get("about:blank")
    browser.get_log("browser")


@pytest.fixture(scope="module")
def apps(gateway):
    """One app, its devices of both environments on four services registered through the
    native API."""
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("POST", "/apps", {"name": "环境 Test phones", "bundle_id": "com.example.env"})
    assert status == 201, data
    app = {"id": data["app"]["id"], "name": "环境 Test phones", "api_key": data["api_key"]}
    headers = {"Authorization": f"Bearer {app['api_key']}"}
    for token, body in DEVICES:
        status, _, text = gateway.request("PUT", f"/api/v1/devices/{token}", body=body, headers=headers)
        assert status == 201, text
        assert json.loads(text)["environment"] == body.get("environment", "production"), text
    return {"push": app}


def test_devices_page_shows_every_devices_environment(browser, gateway, apps):
    choose_app(browser, gateway, "devices", apps["push"])
    for token, body in DEVICES:
        row = visible(browser, f"#devices-table tr[data-token='{token}']")
        expected = "Sandbox" if body.get("environment") == "sandbox" else "Production"
        assert expected in row.text, (token, row.text)
        assert "—" not in row.find_elements(By.CSS_SELECTOR, "td")[2].text
    screenshot(browser, "environment-01-devices")
    browser.find_element(By.CSS_SELECTOR, f"#devices-table tr[data-token='{SANDBOX_FCM}'] a").click()
    text_in(browser, "#device-details", "Sandbox")
    assert unexpected_errors(browser) == []


def test_a_sandbox_test_push_reaches_only_sandbox_devices_and_counts_the_others(browser, gateway, apps):
    choose_app(browser, gateway, "push", apps["push"])
    hint = browser.find_element(By.ID, "push-environment-hint").text
    assert "skipped and counted" in hint and "every other phone alike" in hint, hint
    assert "left out" not in hint
    browser.find_element(By.ID, "audience-all").click()
    Select(browser.find_element(By.ID, "push-environment")).select_by_value("sandbox")
    browser.find_element(By.ID, "push-title").send_keys("测试机")
    browser.find_element(By.ID, "push-body").send_keys("sandbox only")
    screenshot(browser, "environment-02-compose")
    browser.find_element(By.ID, "push-send").click()
    text_in(browser, "main h1", "Message #")
    message_id = int(browser.find_element(By.CSS_SELECTOR, "main h1").text.split("#")[1])

    visible(browser, "#follow-done", timeout=60)
    status = browser.find_element(By.ID, "follow-status")
    assert status.get_attribute("data-delivered") == "3"
    assert status.get_attribute("data-total") == "7", "the skipped devices are counted in the total"
    assert browser.find_element(By.CSS_SELECTOR, "#follow-status .count-skipped b").text == "4"
    skips = visible(browser, "#follow-skip-list .bar-row")
    assert "other_environment" in skips.text and "the device is of the other environment" in skips.text
    assert skips.find_element(By.CSS_SELECTOR, ".right").text == "4"
    screenshot(browser, "environment-03-followed")

    # Per service: the sandbox phones delivered, every production phone skipped.
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status_code, message, _ = admin.call("GET", f"/messages/{message_id}")
    assert status_code == 200, message
    assert message["skips"] == {"other_environment": 4}
    channels = message["channels"]
    assert channels["apns"]["delivered"] == 1 and channels["apns"]["skipped"] == 1, channels
    assert channels["fcm"]["delivered"] == 1 and channels["fcm"]["skipped"] == 1, channels
    assert channels["harmony"]["delivered"] == 1 and channels["harmony"]["skipped"] == 1, channels
    assert channels["huawei"]["delivered"] == 0 and channels["huawei"]["skipped"] == 1, channels
    assert unexpected_errors(browser) == []


def test_the_chinese_console_says_the_same(browser, gateway, apps):
    choose_app(browser, gateway, "push", apps["push"])
    browser.find_element(By.ID, "lang-toggle-top").click()
    try:
        wait(browser).until(lambda d: d.execute_script("return document.documentElement.lang") == "zh-CN")
        hint = visible(browser, "#push-environment-hint").text
        assert "跳过并计数" in hint and "一视同仁" in hint, hint
        screenshot(browser, "environment-04-push-zh")
        go(browser, gateway, "devices")
        row = visible(browser, f"#devices-table tr[data-token='{SANDBOX_HARMONY}']")
        assert "开发环境" in row.text, row.text
    finally:
        browser.find_element(By.ID, "lang-toggle-top").click()
        wait(browser).until(lambda d: d.execute_script("return document.documentElement.lang") != "zh-CN")
