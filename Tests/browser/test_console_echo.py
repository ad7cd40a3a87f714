"""A transport known only from its declaration, in the console (#44): the tests' binary
(`tuisong-with-test-transports`) registers the test-only Echo transport with one registry line,
and the credentials page offers Echo with the fields, labels, hints and refusal words its
declaration gives, in English and in Chinese, with no line of console code for it. What the
form adds is stored and listed like every service's credential, its secret never shown.
"""

import json
import shutil
import tempfile

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from conftest import AdminClient, Gateway, find_test_transports_binary, screenshot
from test_console import go, visible, wait
from test_console_android import choose_app, unexpected_errors

ECHO_KEY = "echo-key-never-shown-7d1"
STANDARD_FORMS = ["fcm", "huawei", "honor", "xiaomi", "oppo", "vivo", "harmony"]


@pytest.fixture(scope="module")
def gateway(request):
    """This module's server is the tests' binary: the standard transports and Echo."""
    directory = tempfile.mkdtemp(prefix="tuisong-browser-echo-")
    gw = Gateway(directory, name="server-echo", binary=find_test_transports_binary())
    yield gw
    gw.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def leave_quietly(browser):
    """After the module: the console log drained, so this server's stop is not blamed on the next."""
    yield
    browser.get("about:blank")
    browser.get_log("browser")


@pytest.fixture(scope="module")
def app(gateway):
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("POST", "/apps", {"name": "Echo 回声", "bundle_id": "com.example.echo"})
    assert status == 201, data
    return {"id": data["app"]["id"], "name": "Echo 回声", "api_key": data["api_key"]}


def choose_echo(browser):
    channel = Select(visible(browser, "#android-channel"))
    channel.select_by_value("echo")
    return visible(browser, "#android-account"), browser.find_element(By.ID, "android-api-key")


def submit_refused(browser, account, key, value):
    account.clear()
    account.send_keys(value)
    key.send_keys(ECHO_KEY)
    browser.find_element(By.ID, "android-cred-submit").click()
    banner = visible(browser, "#android-cred-result .banner.bad")
    assert banner.get_attribute("data-code") == "invalid_account"
    assert banner.get_attribute("data-field") == "account"
    return visible(browser, "#android-account-error").text


def test_echo_credential_form_is_its_declaration_in_english_and_chinese(browser, gateway, app):
    choose_app(browser, gateway, "credentials", app)
    options = [o.get_attribute("value") for o in Select(visible(browser, "#android-channel")).options]
    assert options == STANDARD_FORMS + ["echo"], options
    account, key = choose_echo(browser)
    # Its two fields, named, labelled and hinted as declared; no other service's field shows.
    assert browser.find_element(By.CSS_SELECTOR, "label[for='android-account']").text == "Account"
    assert browser.find_element(By.ID, "android-account-hint").text == "the echo account, letters only"
    assert account.get_attribute("placeholder") == "tester"
    assert browser.find_element(By.CSS_SELECTOR, "label[for='android-api-key']").text == "API key"
    assert key.get_attribute("type") == "password", "a declared secret is a password input"
    assert browser.find_element(By.ID, "android-api-key-hint").text == "Stored encrypted; never shown again."
    for hidden in ("android-app-id", "android-client-id", "android-client-secret", "android-file",
                   "android-badge-class", "android-category"):
        assert not browser.find_element(By.ID, hidden).is_displayed(), hidden

    # Refused by the declaration's own check, in the declaration's words, at the field.
    assert submit_refused(browser, account, key, "tester1") == "The Echo account is letters only."
    screenshot(browser, "echo-01-refused")

    # The same form in Chinese: the declaration's Chinese label, hint and refusal.
    browser.find_element(By.ID, "lang-toggle-top").click()
    try:
        wait(browser).until(lambda d: d.execute_script("return document.documentElement.lang") == "zh-CN")
        account, key = choose_echo(browser)
        assert browser.find_element(By.CSS_SELECTOR, "label[for='android-account']").text == "账号"
        assert browser.find_element(By.ID, "android-account-hint").text == "Echo 账号，只含字母"
        assert browser.find_element(By.CSS_SELECTOR, "label[for='android-api-key']").text == "API 密钥"
        assert submit_refused(browser, account, key, "tester1") == "Echo 账号只能包含字母。"
        screenshot(browser, "echo-02-refused-zh")
    finally:
        browser.find_element(By.ID, "lang-toggle-top").click()
        wait(browser).until(lambda d: d.execute_script("return document.documentElement.lang") != "zh-CN")

    account, key = choose_echo(browser)
    account.send_keys("tester")
    key.send_keys(ECHO_KEY)
    browser.find_element(By.ID, "android-cred-submit").click()
    banner = visible(browser, "#android-cred-result .banner")
    assert "bad" not in banner.get_attribute("class").split(), banner.text
    row = visible(browser, "#channel-credentials-table tr[data-channel='echo']")
    assert "Echo" in row.text and "tester" in row.text, row.text
    assert browser.find_element(By.ID, "android-api-key").get_attribute("value") == ""
    assert ECHO_KEY not in browser.page_source
    screenshot(browser, "echo-03-added")

    # Stored as the declaration validated it, listed by the admin API without its secret.
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("GET", f"/apps/{app['id']}/channel-credentials")
    assert status == 200, data
    echo = [c for c in data["credentials"] if c["channel"] == "echo"]
    assert len(echo) == 1 and echo[0]["vendor_app_id"] == "tester", data
    assert ECHO_KEY not in str(data)
    assert unexpected_errors(browser) == []


def test_an_echo_device_shows_its_declared_service_name(browser, gateway, app):
    """The devices page names the service by its declaration where the console has no words."""
    token = "echo-console-device-1"
    status, _, text = gateway.request(
        "PUT", f"/api/v1/devices/{token}", body={"channel": "echo"},
        headers={"Authorization": f"Bearer {app['api_key']}"})
    assert status in (200, 201), text
    assert json.loads(text)["channel"] == "echo", text
    choose_app(browser, gateway, "devices", app)
    row = visible(browser, f"#devices-table tr[data-token='{token}']")
    assert "Echo" in row.text and "channel.echo" not in row.text, row.text
    go(browser, gateway, "devices")
    assert unexpected_errors(browser) == []
