"""HarmonyOS NEXT in the console (#31): the credentials page adds a HarmonyOS service-account
key file (Huawei Push Kit v3) through the same form as the Android services, lists it by its
project id and sub-account without any part of its private key, and refuses a wrong file (a
Firebase key, a key whose private_key does not load) and an unknown default category with the
server's reason next to the field. A HarmonyOS phone registered through the native API shows
its channel on the devices page, and a push reaches it through local mode's look-alike, counted
on the message page per channel.

Two apps, made through the admin API before the first page loads: one whose devices are pushed
to through local mode's stand-in accounts, one that gets the uploaded key (an app with an
uploaded key signs with it, and the look-alike trusts it too, so the two are kept apart).
"""

import json
import subprocess

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from conftest import AdminClient, screenshot
from test_console import go, text_in, visible, wait
from test_console_android import choose_app, unexpected_errors

IPHONE_TOKEN = "b2" + "0" * 61 + "2"
HARMONY_TOKEN = "MAMzLg-console-harmony_1:AQAAAAEAAb1HarmonyToken=="
TAG = "harmony-console"
PROJECT_ID = "101888000123456789"
KEY_ID = "9f3c2a7e5b1d4c6a8e0f2b4d6a8c0e1f"
SUB_ACCOUNT = "1234567890123456789"


@pytest.fixture(scope="module", autouse=True)
def leave_quietly(browser):
    """After the module: off the monitor (it polls every few seconds) and the console log
    drained, so the stopped server's refused polls are not blamed on the next module."""
    yield
    browser.get("about:blank")
    browser.get_log("browser")


@pytest.fixture(scope="module")
def apps(gateway):
    """The push app (with its native API key) and the credentials app."""
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    made = {}
    for role, name, bundle in (("push", "鸿蒙 Push", "com.example.harmony.push"),
                               ("creds", "鸿蒙 Credentials", "com.example.harmony.creds")):
        status, data, _ = admin.call("POST", "/apps", {"name": name, "bundle_id": bundle})
        assert status == 201, data
        made[role] = {"id": data["app"]["id"], "name": name, "api_key": data["api_key"]}
    return made


@pytest.fixture(scope="module")
def key_files(tmp_path_factory):
    """The key file Huawei's API Console downloads for a service account, and two wrong ones:
    an FCM service account (the other JSON key an operator has) and a HarmonyOS file whose
    private_key is garbage."""
    directory = tmp_path_factory.mktemp("harmony")
    result = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        capture_output=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr.decode()
    key = result.stdout.decode()
    assert key.startswith("-----BEGIN PRIVATE KEY-----")

    def harmony(private_key):
        return {
            "project_id": PROJECT_ID, "key_id": KEY_ID, "private_key": private_key, "sub_account": SUB_ACCOUNT,
            "auth_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/authorize",
            "token_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/token",
            "auth_provider_cert_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/certs",
            "client_cert_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/x509?client_id=",
        }

    good = directory / "private.json"
    good.write_text(json.dumps(harmony(key), indent=2))
    garbage = directory / "private-bad-key.json"
    garbage.write_text(json.dumps(harmony("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")))
    firebase = directory / "console-firebase-adminsdk.json"
    firebase.write_text(json.dumps({
        "type": "service_account", "project_id": "console-fcm", "private_key_id": "0123456789abcdef",
        "private_key": key, "client_email": "push@console-fcm.iam.gserviceaccount.com",
        "token_uri": "https://oauth2.googleapis.com/token"}))
    return {"good": good, "garbage": garbage, "firebase": firebase, "key_line": key.splitlines()[1]}


def refused(browser, code, field):
    """The refusal banner's code and field, and the text next to the field."""
    banner = visible(browser, "#android-cred-result .banner.bad")
    assert banner.get_attribute("data-code") == code
    assert banner.get_attribute("data-field") == field
    return visible(browser, f"#android-{field}-error").text


def test_harmony_service_account_is_added_listed_without_secret_and_bad_files_refused(
        browser, gateway, apps, key_files):
    choose_app(browser, gateway, "credentials", apps["creds"])
    visible(browser, "#android-cred-form")
    Select(visible(browser, "#android-channel")).select_by_value("harmony")
    # HarmonyOS takes the key file and an optional default category: no app id, client or secret.
    assert browser.find_element(By.ID, "android-file").is_displayed()
    assert browser.find_element(By.ID, "android-category").is_displayed()
    for hidden in ("android-app-id", "android-client-id", "android-client-secret", "android-badge-class"):
        assert not browser.find_element(By.ID, hidden).is_displayed(), hidden
    label = browser.find_element(By.CSS_SELECTOR, "label[for='android-file']").text
    assert "Service account key JSON" in label or "服务账号密钥" in label, label
    # The file's hint is Huawei's, not the Firebase console steps FCM's form shows.
    hint = browser.find_element(By.ID, "android-file-hint").text
    assert "Huawei" in hint and "Firebase" not in hint, hint

    # Nothing chosen: the console asks for the file before anything is sent.
    browser.find_element(By.ID, "android-cred-submit").click()
    assert visible(browser, "#android-file-error").text

    # The Firebase key by mistake: refused, saying what the HarmonyOS file lacks.
    browser.find_element(By.ID, "android-file").send_keys(str(key_files["firebase"]))
    browser.find_element(By.ID, "android-cred-submit").click()
    text = refused(browser, "invalid_service_account", "file")
    assert "HarmonyOS service account key has no key_id" in text, text
    screenshot(browser, "harmony-01-firebase-key-refused")

    # A HarmonyOS file whose private_key is not a key.
    browser.find_element(By.ID, "android-file").send_keys(str(key_files["garbage"]))
    browser.find_element(By.ID, "android-cred-submit").click()
    text = refused(browser, "invalid_service_account", "file")
    assert "private_key does not load" in text, text

    # In Chinese the transport's own detail is in Chinese too, never the server's English (#41 item 10).
    browser.find_element(By.ID, "lang-toggle-top").click()
    Select(visible(browser, "#android-channel")).select_by_value("harmony")
    browser.find_element(By.ID, "android-file").send_keys(str(key_files["firebase"]))
    browser.find_element(By.ID, "android-cred-submit").click()
    text = refused(browser, "invalid_service_account", "file")
    assert "缺少 key_id" in text and "has no" not in text, text
    screenshot(browser, "harmony-01-firebase-key-refused-zh")
    browser.find_element(By.ID, "lang-toggle-top").click()
    Select(visible(browser, "#android-channel")).select_by_value("harmony")

    # The right file with a category Huawei does not have: refused at the category field.
    browser.find_element(By.ID, "android-file").send_keys(str(key_files["good"]))
    browser.find_element(By.ID, "android-category").send_keys("CHAT")
    browser.find_element(By.ID, "android-cred-submit").click()
    text = refused(browser, "invalid_category", "category")
    assert "MARKETING" in text and "IM" in text, text
    assert not browser.find_elements(By.CSS_SELECTOR, "#channel-credentials-table tr[data-channel='harmony']")

    category = browser.find_element(By.ID, "android-category")
    category.clear()
    category.send_keys("IM")
    browser.find_element(By.ID, "android-file").send_keys(str(key_files["good"]))
    browser.find_element(By.ID, "android-cred-submit").click()
    banner = visible(browser, "#android-cred-result .banner")
    assert "bad" not in banner.get_attribute("class").split(), banner.text
    assert PROJECT_ID in banner.text and SUB_ACCOUNT in banner.text
    row = visible(browser, "#channel-credentials-table tr[data-channel='harmony']")
    assert "HarmonyOS" in row.text or "鸿蒙" in row.text
    assert PROJECT_ID in row.text and SUB_ACCOUNT in row.text
    assert not browser.find_elements(By.ID, "android-file-error"), "the refusal is cleared"
    assert not browser.find_elements(By.ID, "android-category-error"), "the refusal is cleared"
    # No part of the key, on the page or in what the admin API lists.
    assert key_files["key_line"] not in browser.page_source
    assert "PRIVATE KEY" not in browser.page_source
    screenshot(browser, "harmony-02-added")

    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("GET", f"/apps/{apps['creds']['id']}/channel-credentials")
    assert status == 200, data
    listed = [c for c in data["credentials"] if c["channel"] == "harmony"]
    assert len(listed) == 1 and listed[0]["vendor_app_id"] == PROJECT_ID and listed[0]["client_id"] == SUB_ACCOUNT
    text = json.dumps(data)
    assert key_files["key_line"] not in text and "PRIVATE KEY" not in text and "private_key" not in text
    assert unexpected_errors(browser) == []


def test_a_harmony_phone_is_listed_and_pushed_to_through_the_look_alike(browser, gateway, apps):
    headers = {"Authorization": f"Bearer {apps['push']['api_key']}"}
    for token, body in ((IPHONE_TOKEN, {"environment": "sandbox", "tags": [TAG]}),
                        (HARMONY_TOKEN, {"channel": "harmony", "tags": [TAG]})):
        status, _, text = gateway.request("PUT", f"/api/v1/devices/{token}", body=body, headers=headers)
        assert status in (200, 201), text

    choose_app(browser, gateway, "devices", apps["push"])
    row = visible(browser, f"#devices-table tr[data-token='{HARMONY_TOKEN}']")
    assert row.find_element(By.CSS_SELECTOR, "td.channel").text in ("HarmonyOS", "鸿蒙")
    screenshot(browser, "harmony-03-devices")

    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("POST", f"/apps/{apps['push']['id']}/push", {
        "audience": {"tag": TAG}, "notification": {"alert": {"title": "第三个平台", "body": "APNs and HarmonyOS"}}})
    assert status == 202, data
    message_id = data["message_id"]
    go(browser, gateway, f"push/{message_id}")
    wait(browser, 60).until(lambda d: d.find_element(By.ID, "follow-status").get_attribute("data-delivered") == "2")
    for channel in ("apns", "harmony"):
        delivered = visible(browser, f"#channel-table tr[data-channel='{channel}'] td[data-state='delivered']")
        assert delivered.text == "1", channel
    screenshot(browser, "harmony-04-message-per-channel")

    go(browser, gateway, "monitor")
    cell = f"#monitor-recent tr[data-message='{message_id}'] td.channels"
    text_in(browser, cell, "APNs 1", timeout=60)
    assert browser.find_element(By.CSS_SELECTOR, f"{cell} [data-channel='harmony'] b").text == "1"
    assert unexpected_errors(browser) == []
