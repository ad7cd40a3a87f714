"""Android in the console: the devices page names each device's channel, the monitor and the
message page count deliveries per channel, and the credentials page adds FCM service accounts
and Huawei or Honor clients, refusing a service account whose key does not load with the
server's reason next to the file field.

Two apps, made through the admin API before the first page loads (the console reads the app
list once per load): one whose iPhone and FCM phone are pushed to through local mode's
stand-in accounts, one that gets the credentials. An app with an uploaded FCM account signs in
with it, and a test account cannot sign in anywhere, so the two are kept apart. Each test makes
what it needs through the APIs when an earlier one did not (`ensure_*`).
"""

import base64
import json
import sqlite3
import subprocess

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select

from conftest import AdminClient, screenshot
from test_console import go, text_in, visible, wait

IPHONE_TOKEN = "a1" + "0" * 61 + "1"
FCM_TOKEN = "cX3v9Q2nTm-console_1:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx.console"
TAG = "android-console"
PROJECT_ID = "console-android"
CLIENT_EMAIL = f"push@{PROJECT_ID}.iam.gserviceaccount.com"
HUAWEI_SECRET = "hw-secret-never-shown-5Tq"

shared = {}


@pytest.fixture(scope="module")
def apps(gateway):
    """The push app (with its native API key) and the credentials app."""
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    made = {}
    for role, name, bundle in (("push", "安卓 Push", "com.example.android.push"),
                               ("creds", "安卓 Credentials", "com.example.android.creds")):
        status, data, _ = admin.call("POST", "/apps", {"name": name, "bundle_id": bundle})
        assert status == 201, data
        made[role] = {"id": data["app"]["id"], "name": name, "api_key": data["api_key"]}
    return made


@pytest.fixture(scope="module")
def service_accounts(tmp_path_factory):
    """Two service-account JSON files as Firebase's console downloads them: one whose RSA key
    loads, one whose private_key is garbage."""
    directory = tmp_path_factory.mktemp("fcm")
    result = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        capture_output=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr.decode()
    key = result.stdout.decode()
    assert key.startswith("-----BEGIN PRIVATE KEY-----")

    def account(private_key):
        return {
            "type": "service_account", "project_id": PROJECT_ID, "private_key_id": "0123456789abcdef",
            "private_key": private_key, "client_email": CLIENT_EMAIL, "client_id": "1234567890",
            "token_uri": "https://oauth2.googleapis.com/token",
        }

    good = directory / "console-android-firebase-adminsdk.json"
    good.write_text(json.dumps(account(key), indent=2))
    bad = directory / "console-android-bad-key.json"
    bad.write_text(json.dumps(account("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"),
                              indent=2))
    return {"good": good, "bad": bad, "key_line": key.splitlines()[1]}


def ensure_devices(gateway, apps):
    """An iPhone (sandbox) and an FCM phone registered through the native API, both tagged."""
    if "devices" not in shared:
        headers = {"Authorization": f"Bearer {apps['push']['api_key']}"}
        for token, body in ((IPHONE_TOKEN, {"environment": "sandbox", "tags": [TAG]}),
                            (FCM_TOKEN, {"channel": "fcm", "tags": [TAG]})):
            status, _, text = gateway.request("PUT", f"/api/v1/devices/{token}", body=body, headers=headers)
            assert status in (200, 201), text
        shared["devices"] = True


def choose_app(driver, gateway, route, app):
    """Opens `route` with `app` picked in the top bar (the page renders again for it)."""
    go(driver, gateway, route)
    picker = Select(driver.find_element(By.ID, "app-picker"))
    if picker.first_selected_option.get_attribute("value") != str(app["id"]):
        picker.select_by_value(str(app["id"]))
    text_in(driver, "main .subtitle", app["name"])


def unexpected_errors(driver):
    """Console errors other than the session probe before login and the refusals on purpose."""
    return [
        entry for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE"
        and "/admin/api/session" not in entry["message"]
        and not ("/channel-credentials " in entry["message"] and "status of 422" in entry["message"])
    ]


def test_devices_page_shows_the_channel_of_each_device(browser, gateway, apps):
    ensure_devices(gateway, apps)
    choose_app(browser, gateway, "devices", apps["push"])
    fcm_row = visible(browser, f"#devices-table tr[data-token='{FCM_TOKEN}']")
    assert fcm_row.find_element(By.CSS_SELECTOR, "td.channel").text == "FCM"
    iphone_row = browser.find_element(By.CSS_SELECTOR, f"#devices-table tr[data-token='{IPHONE_TOKEN}']")
    assert iphone_row.find_element(By.CSS_SELECTOR, "td.channel").text == "APNs"
    assert "Sandbox" in iphone_row.text
    screenshot(browser, "android-01-devices")

    # The opaque token opens its device page and is shown whole there.
    fcm_row.find_element(By.CSS_SELECTOR, "a").click()
    details = visible(browser, "#device-details")
    assert "FCM" in details.text
    assert browser.find_element(By.CSS_SELECTOR, "main .subtitle.token").text == FCM_TOKEN
    assert unexpected_errors(browser) == []


def test_monitor_and_message_page_count_deliveries_per_channel(browser, gateway, apps):
    ensure_devices(gateway, apps)
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("POST", f"/apps/{apps['push']['id']}/push", {
        "audience": {"tag": TAG}, "notification": {"alert": {"title": "两个通道", "body": "APNs and FCM"}}})
    assert status == 202, data
    message_id = data["message_id"]

    go(browser, gateway, "monitor")
    cell = f"#monitor-recent tr[data-message='{message_id}'] td.channels"
    # Counted per channel once each device has its outcome; the monitor refreshes by itself.
    text_in(browser, cell, "APNs 1", timeout=60)
    text_in(browser, cell, "FCM 1", timeout=60)
    assert browser.find_element(By.CSS_SELECTOR, f"{cell} [data-channel='fcm'] b").text == "1"
    screenshot(browser, "android-02-monitor-per-channel")
    # At 1400 px (a laptop) the recent messages, channels column included, fit without a
    # sideways scroll inside their frame (#30 item 13).
    size = browser.get_window_size()
    try:
        browser.set_window_size(1400, 900)
        wait(browser, 10).until(lambda d: d.execute_script("return window.innerWidth") >= 1380)
        frame, content = browser.execute_script(
            "const w = document.getElementById('monitor-recent'); return [w.clientWidth, w.scrollWidth]")
        assert content <= frame, f"the recent messages scroll sideways at 1400 px: {content} px in {frame} px"
        screenshot(browser, "android-02b-monitor-1400px")
    finally:
        browser.set_window_size(size["width"], size["height"])

    go(browser, gateway, f"push/{message_id}")
    wait(browser, 60).until(lambda d: d.find_element(By.ID, "follow-status").get_attribute("data-delivered") == "2")
    for channel in ("apns", "fcm"):
        delivered = visible(browser, f"#channel-table tr[data-channel='{channel}'] td[data-state='delivered']")
        assert delivered.text == "1", channel
    assert not browser.find_elements(By.CSS_SELECTOR, "#channel-table tr[data-channel='huawei']")
    screenshot(browser, "android-03-message-per-channel")
    assert unexpected_errors(browser) == []


def test_a_service_code_in_the_failures_is_explained_by_its_declaration(browser, gateway, apps):
    """Local mode's Huawei look-alike refuses a push whose every token is invalid with 80300007:
    the monitor's failures by service show the code with what Huawei's declaration says it
    means, in the console's language (the console keeps no list of service codes)."""
    headers = {"Authorization": f"Bearer {apps['push']['api_key']}"}
    token = "invalid-console-huawei-1"
    status, _, text = gateway.request("PUT", f"/api/v1/devices/{token}", body={"channel": "huawei"}, headers=headers)
    assert status in (200, 201), text
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("POST", f"/apps/{apps['push']['id']}/push", {
        "audience": {"token": token}, "notification": {"alert": {"title": "无效", "body": "refused"}}})
    assert status == 202, data

    go(browser, gateway, "monitor")
    row = "#failures-by-channel tr[data-channel='huawei'][data-reason='80300007']"
    wait(browser, 60).until(EC.presence_of_element_located((By.CSS_SELECTOR, row)))
    cells = browser.find_elements(By.CSS_SELECTOR, f"{row} td")
    assert cells[0].text == "Huawei", cells[0].text
    assert "every token is invalid" in cells[1].text, cells[1].text
    browser.find_element(By.ID, "lang-toggle-top").click()
    try:
        wait(browser).until(lambda d: "所有令牌均无效" in d.find_element(By.CSS_SELECTOR, f"{row} td.mono").text)
        assert browser.find_element(By.CSS_SELECTOR, f"{row} td").text == "华为"
        screenshot(browser, "android-02c-monitor-failure-meaning-zh")
    finally:
        browser.find_element(By.ID, "lang-toggle-top").click()
    assert unexpected_errors(browser) == []


def test_fcm_service_account_is_added_and_a_bad_key_is_refused(browser, gateway, apps, service_accounts):
    choose_app(browser, gateway, "credentials", apps["creds"])
    visible(browser, "#android-cred-form")
    assert Select(browser.find_element(By.ID, "android-channel")).first_selected_option.get_attribute("value") == "fcm"
    assert not browser.find_element(By.ID, "android-client-secret").is_displayed(), "FCM takes a file, not a secret"
    assert "Firebase" in browser.find_element(By.ID, "android-file-hint").text

    # A file whose private_key does not load: refused at upload, the server's reason at the field.
    browser.find_element(By.ID, "android-file").send_keys(str(service_accounts["bad"]))
    browser.find_element(By.ID, "android-cred-submit").click()
    banner = visible(browser, "#android-cred-result .banner.bad")
    assert banner.get_attribute("data-code") == "corrupt_file"
    assert banner.get_attribute("data-field") == "file"
    field_error = visible(browser, "#android-file-error")
    assert "private_key does not load" in field_error.text, field_error.text
    assert "service-account" in field_error.text
    assert not browser.find_elements(By.CSS_SELECTOR, "#channel-credentials-table")
    screenshot(browser, "android-04-fcm-bad-key")

    browser.find_element(By.ID, "android-file").send_keys(str(service_accounts["good"]))
    browser.find_element(By.ID, "android-cred-submit").click()
    # Local mode's look-alike takes every credential: the console says it was not checked.
    visible(browser, "#android-cred-result .banner.warn[data-check='not_checked']")
    row = visible(browser, "#channel-credentials-table tr[data-channel='fcm']")
    assert PROJECT_ID in row.text and CLIENT_EMAIL in row.text and "OK" in row.text
    assert not browser.find_elements(By.ID, "android-file-error"), "the refusal is cleared"
    assert service_accounts["key_line"] not in browser.page_source
    screenshot(browser, "android-05-fcm-added")
    shared["fcm_credential"] = int(row.get_attribute("data-channel-credential"))
    assert unexpected_errors(browser) == []


def test_huawei_client_is_added_and_deleted(browser, gateway, apps):
    choose_app(browser, gateway, "credentials", apps["creds"])
    # Each service names its values its own way; only Huawei and Honor take a badge class.
    channel = Select(visible(browser, "#android-channel"))
    channel.select_by_value("oppo")
    assert browser.find_element(By.CSS_SELECTOR, "label[for='android-client-id']").text == "AppKey"
    assert browser.find_element(By.CSS_SELECTOR, "label[for='android-client-secret']").text == "MasterSecret"
    assert not browser.find_element(By.ID, "android-badge-class").is_displayed()
    channel.select_by_value("xiaomi")
    assert browser.find_element(By.CSS_SELECTOR, "label[for='android-app-id']").text in ("Package name", "包名")
    Select(visible(browser, "#android-channel")).select_by_value("huawei")
    assert browser.find_element(By.ID, "android-badge-class").is_displayed()
    assert not browser.find_element(By.ID, "android-file").is_displayed()
    app_id = visible(browser, "#android-app-id")
    app_id.send_keys("not-a-number")
    browser.find_element(By.ID, "android-client-id").send_keys("10086")
    secret = browser.find_element(By.ID, "android-client-secret")
    assert secret.get_attribute("type") == "password"
    secret.send_keys(HUAWEI_SECRET)
    browser.find_element(By.ID, "android-badge-class").send_keys("com.example.MainActivity")
    browser.find_element(By.ID, "android-cred-submit").click()
    assert "number" in visible(browser, "#android-app-id-error").text
    assert browser.find_element(By.CSS_SELECTOR, "#android-cred-result .banner.bad").get_attribute(
        "data-code") == "invalid_vendor_app_id"

    app_id.clear()
    app_id.send_keys("10086")
    browser.find_element(By.ID, "android-cred-submit").click()
    row = visible(browser, "#channel-credentials-table tr[data-channel='huawei']")
    assert "10086" in row.text and "com.example.MainActivity" in row.text
    assert not browser.find_elements(By.ID, "android-app-id-error")
    assert browser.find_element(By.ID, "android-client-secret").get_attribute("value") == ""
    assert HUAWEI_SECRET not in browser.page_source
    screenshot(browser, "android-06-huawei-added")

    # Delete asks first; cancelling keeps it, confirming removes it.
    row.find_element(By.CSS_SELECTOR, "button[data-delete]").click()
    visible(browser, "dialog.confirm").find_element(By.CSS_SELECTOR, "button:not(.danger)").click()
    assert browser.find_elements(By.CSS_SELECTOR, "#channel-credentials-table tr[data-channel='huawei']")
    row.find_element(By.CSS_SELECTOR, "button[data-delete]").click()
    visible(browser, "dialog.confirm").find_element(By.CSS_SELECTOR, "button.danger").click()
    wait(browser).until(EC.staleness_of(row))
    wait(browser).until(lambda d: not d.find_elements(
        By.CSS_SELECTOR, "#channel-credentials-table tr[data-channel='huawei']"))
    assert unexpected_errors(browser) == []


def test_xiaomi_app_id_is_the_package_name(browser, gateway, apps):
    """A number in Xiaomi's app id field is answered with what Xiaomi wants (the package name),
    as the CLI says, not the other services' "the number the developer console shows"."""
    choose_app(browser, gateway, "credentials", apps["creds"])
    Select(visible(browser, "#android-channel")).select_by_value("xiaomi")
    visible(browser, "#android-app-id").send_keys("2882303761517")
    browser.find_element(By.ID, "android-client-id").send_keys("2882303761517")
    browser.find_element(By.ID, "android-client-secret").send_keys("mi-secret-never-shown")
    browser.find_element(By.ID, "android-cred-submit").click()
    error = visible(browser, "#android-app-id-error").text
    assert "package name" in error or "包名" in error, error
    assert "number" not in error and "数字" not in error, error
    assert unexpected_errors(browser) == []


def test_a_failing_android_credential_is_shown_in_the_monitor(browser, gateway, apps, service_accounts):
    if "fcm_credential" not in shared:
        admin = AdminClient(gateway)
        assert admin.login()[0] == 200
        body = {"channel": "fcm", "file": base64.b64encode(service_accounts["good"].read_bytes()).decode()}
        status, data, _ = admin.call("POST", f"/apps/{apps['creds']['id']}/channel-credentials", body)
        assert status == 201, data
        shared["fcm_credential"] = data["id"]
    # FCM refusing an account is the transport's business (and its tests'); here the row is
    # marked as the transport marks it, and the console must put it in front of the operator.
    with sqlite3.connect(gateway.directory / "tuisong.db", timeout=10) as db:
        db.execute("UPDATE channel_credentials SET status = 'failing', status_reason = 'invalid_grant' WHERE id = ?",
                   (shared["fcm_credential"],))
    go(browser, gateway, "monitor")
    item = visible(browser, "#failing-credentials li[data-channel='fcm']")
    assert "安卓 Credentials" in item.text and "FCM" in item.text and "invalid_grant" in item.text
    screenshot(browser, "android-07-monitor-failing-fcm")
    choose_app(browser, gateway, "credentials", apps["creds"])
    row = visible(browser, f"#channel-credentials-table tr[data-channel-credential='{shared['fcm_credential']}']")
    assert "invalid_grant" in row.text
    assert unexpected_errors(browser) == []
