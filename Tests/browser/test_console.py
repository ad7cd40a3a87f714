"""The console in a real browser, in the order an operator works: log in, create an app, set
its vendor keys, upload a .p8 key and a .p12 certificate, write a template, register devices
through the native API, send a test push to the bundled APNs mock, watch every device get it,
log out. Screenshots of each page go to test-output/browser/.

The tests share one server and one browser and run in that order, each reusing what the ones
before it made; a test run on its own (`-k`) makes what it needs through the APIs (`ensure_*`)
and logs in when it finds the login page.
"""

import base64
import json
import re
import sqlite3
import subprocess
import time

import pytest
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import ADMIN_PASSWORD, AdminClient, make_driver, screenshot

WAIT = 15
DEVICE_COUNT = 6
VENDOR_SECRET = "baidu-secret-console-9Qx"
P12_PASSWORD = "p12-pass-Lm7"

# What earlier tests created through the console, for later ones. A test that needs something
# an earlier test makes asks for it through `ensure_*`, which creates it through the APIs when
# that test did not run (`-k`, a failure before it), so every test can run on its own.
shared = {}


def _admin(gateway):
    client = AdminClient(gateway)
    assert client.login()[0] == 200
    return client


def ensure_app(gateway):
    if "app_id" not in shared:
        status, data, _ = _admin(gateway).call(
            "POST", "/apps", {"name": "订单助手 Orders", "bundle_id": "com.example.console"})
        assert status == 201, data
        shared["app_id"] = data["app"]["id"]
        shared["api_key"] = data["api_key"]
    return shared["app_id"]


def ensure_template(gateway):
    if "template_id" not in shared:
        app_id = ensure_app(gateway)
        status, data, _ = _admin(gateway).call(
            "POST", f"/apps/{app_id}/templates",
            {"name": "shipped", "title_pattern": "订单 {0} 已发货", "body_pattern": "{1} 正在路上 {{ok}}"})
        assert status == 201, data
        shared["template_id"] = data["id"]
    return shared["template_id"]


def register_devices(gateway):
    """DEVICE_COUNT sandbox devices through the native API, tagged console-test and 北京."""
    ensure_app(gateway)
    headers = {"Authorization": f"Bearer {shared['api_key']}"}
    tokens = []
    for n in range(DEVICE_COUNT):
        token = f"c0{n:062x}"
        body = {"environment": "sandbox", "user": f"user-{n % 2}", "tags": ["console-test", "北京"]}
        status, _, text = gateway.request("PUT", f"/api/v1/devices/{token}", body=body, headers=headers)
        assert status in (200, 201), text
        tokens.append(token)
    shared["tokens"] = tokens
    return tokens


def ensure_devices(gateway):
    return shared["tokens"] if "tokens" in shared else register_devices(gateway)


def ensure_credentials(gateway, credentials_dir):
    """The sandbox .p8 key and the production .p12 certificate the upload test stores."""
    if not shared.get("credentials"):
        app_id = ensure_app(gateway)
        admin = _admin(gateway)
        uploads = [
            {"kind": "p8", "environment": "sandbox", "key_id": "ABC123DEFG", "team_id": "TEAM123456",
             "file": base64.b64encode(credentials_dir["p8"].read_bytes()).decode()},
            {"kind": "p12", "environment": "production", "password": P12_PASSWORD,
             "file": base64.b64encode(credentials_dir["p12"].read_bytes()).decode()},
        ]
        for body in uploads:
            status, data, _ = admin.call("POST", f"/apps/{app_id}/credentials", body)
            assert status == 201, data
        shared["credentials"] = True


def ensure_message(gateway):
    if "message_id" not in shared:
        app_id = ensure_app(gateway)
        ensure_devices(gateway)
        body = {"environment": "sandbox", "audience": {"tag": "console-test"},
                "notification": {"alert": {"title": "narrow", "body": "a message to show"}}}
        status, data, _ = _admin(gateway).call("POST", f"/apps/{app_id}/push", body)
        assert status == 202, data
        shared["message_id"] = data["message_id"]
    return shared["message_id"]


def wait(driver, timeout=WAIT):
    # Pages re-render after a save: an element found a moment ago may be gone; look again.
    return WebDriverWait(driver, timeout, poll_frequency=0.1,
                         ignored_exceptions=(NoSuchElementException, StaleElementReferenceException))


def visible(driver, css, timeout=WAIT):
    return wait(driver, timeout).until(EC.visibility_of_element_located((By.CSS_SELECTOR, css)))


def text_in(driver, css, text, timeout=WAIT):
    return wait(driver, timeout).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))


def go(driver, gateway, route):
    """Opens a route and waits until its page has rendered (a hash change reloads nothing)."""
    driver.get(f"{gateway.base}/#/{route}")

    def rendered_or_login(d):
        logins = d.find_elements(By.ID, "login-password")
        if logins and logins[0].is_displayed():
            return "login"
        return d.find_element(By.ID, "main").get_attribute("data-route") == route

    if wait(driver).until(rendered_or_login) == "login":
        # A test run on its own (or after the logout test) starts without a session.
        driver.find_element(By.ID, "login-password").send_keys(ADMIN_PASSWORD, Keys.ENTER)
        visible(driver, "#topbar")
        driver.get(f"{gateway.base}/#/{route}")
        wait(driver).until(lambda d: d.find_element(By.ID, "main").get_attribute("data-route") == route)
    heading = visible(driver, "main h1")
    text = driver.find_element(By.ID, "main").text
    leaked = [word for word in ("undefined", "NaN", "[object Object]") if word in text]
    leaked += ["null"] if re.search(r"(^|\n)null($|\n)", text) else []
    assert not leaked, f"{route} shows {leaked}"
    return heading


def browser_errors(driver):
    """Console errors other than the expected refusals: the session probe before login, the
    wrong login password, the wrong .p12 password and the second app of one name on purpose."""
    return [
        entry for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE"
        and "/admin/api/session" not in entry["message"] and "/admin/api/login" not in entry["message"]
        and not ("/credentials " in entry["message"] and "status of 422" in entry["message"])
        and not ("/admin/api/apps " in entry["message"] and "status of 409" in entry["message"])
    ]


def session_cookie(driver):
    """The session cookie, whose path (/admin/api) hides it from get_cookie on the page."""
    cookies = driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
    return next((c for c in cookies if c["name"] == "tuisong_session"), None)


def features(gateway):
    client = AdminClient(gateway)
    assert client.login()[0] == 200
    return client.call("GET", "/session")[1]["features"]


def openssl(*args, input=None):
    result = subprocess.run(["openssl", *args], input=input, capture_output=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


@pytest.fixture(scope="module")
def credentials_dir(tmp_path_factory):
    """A .p8 signing key and a .p12 push certificate made with openssl, as Apple hands them out."""
    directory = tmp_path_factory.mktemp("credentials")
    p8 = directory / "AuthKey_ABC123DEFG.p8"
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(p8))
    key = directory / "push.key"
    cert = directory / "push.crt"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
            "-days", "20", "-subj", "/UID=com.example.console/CN=Apple Push Services: com.example.console/O=Console Test")
    p12 = directory / "push.p12"
    openssl("pkcs12", "-export", "-inkey", str(key), "-in", str(cert), "-out", str(p12),
            "-passout", f"pass:{P12_PASSWORD}")
    return {"p8": p8, "p12": p12}


def test_login_refuses_a_wrong_password_then_enters(browser, gateway):
    browser.get(gateway.base + "/")
    password = visible(browser, "#login-password")
    assert browser.switch_to.active_element == password, "the password field has the focus"
    password.send_keys("not the password", Keys.ENTER)
    text_in(browser, "#login-error", "Wrong password")
    screenshot(browser, "01-login-wrong-password")
    password = browser.find_element(By.ID, "login-password")
    password.clear()
    password.send_keys(ADMIN_PASSWORD, Keys.ENTER)
    visible(browser, "#topbar")
    text_in(browser, "main h1", "Delivery monitor")
    # The session cookie is invisible to scripts.
    assert "tuisong_session" not in browser.execute_script("return document.cookie")
    cookie = session_cookie(browser)
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/admin/api"
    screenshot(browser, "02-monitor-empty")


def test_create_an_app_shows_its_key_once(browser, gateway):
    go(browser, gateway, "apps")
    browser.find_element(By.ID, "new-app-name").send_keys("订单助手 Orders")
    browser.find_element(By.ID, "new-app-bundle").send_keys("com.example.console")
    browser.find_element(By.ID, "new-app-submit").click()
    key = visible(browser, "#api-key-value").text
    assert key.startswith("tsk_")
    shared["api_key"] = key
    row = visible(browser, "#apps-table tbody tr")
    shared["app_id"] = int(row.get_attribute("data-app"))
    assert "com.example.console" in row.text
    screenshot(browser, "03-app-created")
    # Shown once: the app's own page never shows it again.
    go(browser, gateway, f"apps/{shared['app_id']}")
    assert key not in browser.page_source


def test_a_second_app_of_one_name_and_bundle_id_is_refused_at_its_name(browser, gateway):
    ensure_app(gateway)
    go(browser, gateway, "apps")
    browser.find_element(By.ID, "new-app-name").send_keys("订单助手 orders")
    browser.find_element(By.ID, "new-app-bundle").send_keys("com.example.console")
    browser.find_element(By.ID, "new-app-submit").click()
    text_in(browser, "#new-app-name-error", "is already named")
    assert browser.find_element(By.ID, "new-app-name").get_attribute("aria-invalid") is not None
    assert len(browser.find_elements(By.CSS_SELECTOR, "#apps-table tbody tr")) == 1, "no second app"


def test_vendor_secret_is_write_only(browser, gateway):
    go(browser, gateway, f"apps/{ensure_app(gateway)}")
    browser.find_element(By.ID, "vendor-baidu-apikey").send_keys("AK-console-1")
    browser.find_element(By.ID, "vendor-baidu-secret_key").send_keys(VENDOR_SECRET)
    browser.find_element(By.ID, "app-save").click()
    wait(browser).until(lambda d: "set" in d.find_element(By.CSS_SELECTOR, "label[for='vendor-baidu-secret_key'] .badge").text
                        and d.find_element(By.ID, "vendor-baidu-secret_key").get_attribute("value") == "")
    assert browser.find_element(By.ID, "vendor-baidu-apikey").get_attribute("value") == "AK-console-1"
    assert VENDOR_SECRET not in browser.page_source
    screenshot(browser, "04-app-vendor-settings")


def test_jpush_keys_set_in_the_console_authenticate_its_server_sdk(browser, gateway):
    """JPush (#45): the app's AppKey and Master Secret set on the console's app page are what
    JPush's own server SDK (its hosts pointed here) authenticates with; the secret is write-only."""
    import jpush
    from jpush import common

    go(browser, gateway, f"apps/{ensure_app(gateway)}")
    app_key, secret = "7d431e42dfa6a6d693ac2d04", "5e987ac6d2e04d95a9d8f0d1"
    browser.find_element(By.ID, "vendor-jpush-app_key").send_keys(app_key)
    browser.find_element(By.ID, "vendor-jpush-master_secret").send_keys(secret)
    browser.find_element(By.ID, "app-save").click()
    wait(browser).until(lambda d: "set" in d.find_element(By.CSS_SELECTOR, "label[for='vendor-jpush-master_secret'] .badge").text
                        and d.find_element(By.ID, "vendor-jpush-master_secret").get_attribute("value") == "")
    assert secret not in browser.page_source

    base = gateway.base + "/v3/"
    common.ZONES["DEFAULT"] = {"PUSH": base, "REPORT": base, "DEVICE": base + "devices/",
                               "ALIAS": base + "aliases/", "TAG": base + "tags/",
                               "SCHEDULE": base + "schedules/", "ADMIN": base}
    assert jpush.JPush(app_key, secret).create_device().get_taglist().payload == {"tags": []}
    with pytest.raises(jpush.Unauthorized):
        jpush.JPush(app_key, "0" * 24).create_device().get_taglist()


def test_upload_p8_and_p12_with_clear_errors(browser, gateway, credentials_dir):
    assert features(gateway)["credentials"], "the gateway mounts the credential service"
    ensure_app(gateway)
    go(browser, gateway, "credentials")
    visible(browser, "#cred-upload-form")

    # A .p12 with the wrong password is refused with a clear message.
    browser.find_element(By.ID, "cred-kind-p12").click()
    browser.find_element(By.ID, "cred-file").send_keys(str(credentials_dir["p12"]))
    browser.find_element(By.ID, "cred-password").send_keys("wrong password")
    browser.find_element(By.ID, "cred-upload-submit").click()
    banner = visible(browser, "#cred-upload-result .banner.bad")
    assert banner.get_attribute("data-code") == "wrong_password"
    assert "Wrong password" in banner.text
    screenshot(browser, "05-credential-wrong-password")

    # The same file with its password.
    browser.find_element(By.ID, "cred-file").send_keys(str(credentials_dir["p12"]))
    password = browser.find_element(By.ID, "cred-password")
    password.clear()
    password.send_keys(P12_PASSWORD)
    Select(browser.find_element(By.ID, "cred-environment")).select_by_value("production")
    browser.find_element(By.ID, "cred-upload-submit").click()
    visible(browser, "#cred-upload-result .banner.ok")
    row = visible(browser, "#credentials-table tr[data-kind='p12']")
    assert "days left" in row.text and "badge warn" in row.get_attribute("innerHTML"), "expires in 20 days: a warning"

    # The .p8 key for the sandbox, where the test devices are.
    browser.find_element(By.ID, "cred-kind-p8").click()
    browser.find_element(By.ID, "cred-file").send_keys(str(credentials_dir["p8"]))
    browser.find_element(By.ID, "cred-key-id").send_keys("ABC123DEFG")
    browser.find_element(By.ID, "cred-team-id").send_keys("TEAM123456")
    Select(browser.find_element(By.ID, "cred-environment")).select_by_value("sandbox")
    browser.find_element(By.ID, "cred-upload-submit").click()
    row = visible(browser, "#credentials-table tr[data-kind='p8']")
    assert "ABC123DEFG" in row.text

    # Test connection to the bundled APNs mock with the p8 credential.
    row.find_element(By.CSS_SELECTOR, "button[data-test]").click()
    result = visible(browser, "#credential-test-result .banner", timeout=45)
    assert result.get_attribute("data-ok") == "true", result.text
    screenshot(browser, "06-credentials")
    assert P12_PASSWORD not in browser.page_source
    shared["credentials"] = True

    # A Tencent busiId / Easemob notifier name: the selector is stored and shown with the key.
    browser.find_element(By.ID, "cred-kind-p8").click()
    browser.find_element(By.ID, "cred-file").send_keys(str(credentials_dir["p8"]))
    key_id = browser.find_element(By.ID, "cred-key-id")
    key_id.clear()
    key_id.send_keys("BUSI1001KY")
    Select(browser.find_element(By.ID, "cred-environment")).select_by_value("production")
    browser.find_element(By.ID, "cred-selector").send_keys("1001")
    browser.find_element(By.ID, "cred-upload-submit").click()
    wait(browser).until(lambda d: any("BUSI1001KY" in r.text and "Selector 1001" in r.text
                                      for r in d.find_elements(By.CSS_SELECTOR, "#credentials-table tr[data-kind='p8']")))
    assert browser.find_element(By.ID, "cred-selector").get_attribute("value") == ""


def test_upload_form_is_the_declared_form_and_sends_what_it_always_sent(browser, gateway, credentials_dir):
    """The upload form is rendered from the uploaded-files service's declaration
    (`features.uploaded_files`, #44): its kinds, labels, hints, accepted files and the fields each
    kind takes. What it sends is, byte for byte, the request the console always sent: the fields a
    kind needs always, a password only when one was typed."""
    declared = features(gateway)["uploaded_files"]
    ensure_app(gateway)
    go(browser, gateway, "credentials")
    visible(browser, "#cred-upload-form")
    assert browser.find_element(By.ID, "cred-upload-title").text == f"Upload a credential for {declared['display_name']}"
    kinds = [e.get_attribute("value") for e in browser.find_elements(By.CSS_SELECTOR, "input[name='cred-kind']")]
    assert kinds == [f["name"] for f in declared["files"]] == ["p8", "p12", "pem"]
    for file in declared["files"]:
        browser.find_element(By.ID, f"cred-kind-{file['name']}").click()
        assert browser.find_element(By.CSS_SELECTOR, f"label[for='cred-kind-{file['name']}']").text == file["label"]["en"]
        assert browser.find_element(By.ID, "cred-file-hint").text == file["hint_text"]["en"]
        assert browser.find_element(By.ID, "cred-file").get_attribute("accept") == file["accept"]
        shown = [f["name"] for f in declared["fields"]
                 if browser.find_element(By.ID, "cred-" + f["name"].replace("_", "-")).is_displayed()]
        assert shown == file["needs"] + file["optional"], file["name"]
    assert browser.find_element(By.ID, "cred-key-id").get_attribute("maxlength") == "10"
    assert browser.find_element(By.ID, "cred-environment-hint").text == declared["environment_hint_text"]["en"]

    # The bodies the form posts, as the browser sends them.
    browser.execute_script("""
        window.sentUploads = [];
        const send = window.fetch;
        window.fetch = (url, options) => {
          if (/\\/credentials$/.test(String(url)) && options && options.method === 'POST') window.sentUploads.push(options.body);
          return send(url, options);
        };""")

    def submit_and_read():
        browser.find_element(By.ID, "cred-upload-submit").click()
        wait(browser).until(lambda d: d.execute_script("return window.sentUploads.length"))
        visible(browser, "#cred-upload-result .banner")
        return browser.execute_script("return window.sentUploads.pop()")

    def fill(element_id, value):
        element = browser.find_element(By.ID, element_id)
        element.clear()
        element.send_keys(value)

    # A password typed for a certificate is not sent with a key.
    browser.find_element(By.ID, "cred-kind-p12").click()
    fill("cred-password", "not sent with a key")
    browser.find_element(By.ID, "cred-kind-p8").click()
    browser.find_element(By.ID, "cred-file").send_keys(str(credentials_dir["p8"]))
    fill("cred-key-id", "ABC123DEFG")
    fill("cred-team-id", "TEAM123456")
    browser.find_element(By.ID, "cred-selector").clear()
    Select(browser.find_element(By.ID, "cred-environment")).select_by_value("sandbox")
    p8 = base64.b64encode(credentials_dir["p8"].read_bytes()).decode()
    assert submit_and_read() == json.dumps(
        {"kind": "p8", "environment": "sandbox", "file": p8, "key_id": "ABC123DEFG", "team_id": "TEAM123456"},
        separators=(",", ":"))

    browser.find_element(By.ID, "cred-kind-p12").click()
    browser.find_element(By.ID, "cred-file").send_keys(str(credentials_dir["p12"]))
    fill("cred-password", P12_PASSWORD)
    Select(browser.find_element(By.ID, "cred-environment")).select_by_value("production")
    p12 = base64.b64encode(credentials_dir["p12"].read_bytes()).decode()
    assert submit_and_read() == json.dumps(
        {"kind": "p12", "environment": "production", "file": p12, "password": P12_PASSWORD}, separators=(",", ":"))

    # A certificate without a password typed is sent without one.
    browser.find_element(By.ID, "cred-kind-pem").click()
    browser.find_element(By.ID, "cred-file").send_keys(str(credentials_dir["p8"]))
    browser.find_element(By.ID, "cred-password").clear()
    assert submit_and_read() == json.dumps(
        {"kind": "pem", "environment": "production", "file": p8}, separators=(",", ":"))
    visible(browser, "#cred-upload-result .banner.bad")

    # In Chinese: the declaration's Chinese words, the service named from the API.
    browser.find_element(By.ID, "lang-toggle-top").click()
    text_in(browser, "#cred-upload-title", f"上传 {declared['display_name_text']['zh']} 凭证")
    p8_label = browser.find_element(By.CSS_SELECTOR, "label[for='cred-kind-p8']").text
    assert p8_label == declared["files"][0]["label"]["zh"]
    browser.find_element(By.ID, "cred-kind-p8").click()
    assert browser.find_element(By.ID, "cred-file-hint").text == declared["files"][0]["hint_text"]["zh"]
    browser.find_element(By.ID, "lang-toggle-top").click()
    text_in(browser, "#cred-upload-title", f"Upload a credential for {declared['display_name']}")


def test_template_with_live_preview(browser, gateway):
    ensure_app(gateway)
    go(browser, gateway, "templates/new")
    browser.find_element(By.ID, "template-name").send_keys("shipped")
    browser.find_element(By.ID, "template-title").send_keys("订单 {0} 已发货")
    browser.find_element(By.ID, "template-body").send_keys("{1} 正在路上 {{ok}}")
    # Placeholders without a sample value show as written, marked.
    assert visible(browser, "#preview-title .placeholder-missing").text == "{0}"
    browser.find_element(By.ID, "template-arg-0").send_keys("A-17")
    browser.find_element(By.ID, "template-arg-1").send_keys("小米手环")
    text_in(browser, "#preview-title", "订单 A-17 已发货")
    assert browser.find_element(By.ID, "preview-body").text == "小米手环 正在路上 {ok}"
    screenshot(browser, "07-template-preview")
    browser.find_element(By.ID, "template-save").click()
    link = visible(browser, "#template-list a")
    assert link.text == "shipped"
    shared["template_id"] = int(link.get_attribute("href").rsplit("/", 1)[1])


def test_devices_registered_through_the_native_api_are_searchable(browser, gateway):
    register_devices(gateway)
    go(browser, gateway, "devices")
    text_in(browser, "#device-summary", f"{DEVICE_COUNT} devices")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#devices-table tbody tr")) == DEVICE_COUNT

    Select(browser.find_element(By.ID, "device-by")).select_by_value("user")
    browser.find_element(By.ID, "device-q").send_keys("user-1", Keys.ENTER)
    wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#devices-table tbody tr")) == DEVICE_COUNT // 2)
    browser.find_element(By.CSS_SELECTOR, "#tag-list [data-tag='console-test']").click()
    wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#devices-table tbody tr")) == DEVICE_COUNT)
    screenshot(browser, "08-devices")

    browser.find_element(By.CSS_SELECTOR, f"tr[data-token='{shared['tokens'][0]}'] a").click()
    details = visible(browser, "#device-details")
    assert "console-test" in details.text and "北京" in details.text and "Sandbox" in details.text
    screenshot(browser, "09-device-detail")
    browser.find_element(By.ID, "device-send-push").click()
    token_input = visible(browser, "#push-token")
    assert token_input.get_attribute("value") == shared["tokens"][0]


def test_test_push_reaches_every_device(browser, gateway, credentials_dir):
    assert features(gateway)["push"], "the gateway runs a delivery engine"
    tokens = ensure_devices(gateway)
    ensure_credentials(gateway, credentials_dir)
    template_id = ensure_template(gateway)
    go(browser, gateway, "push")
    browser.find_element(By.ID, "audience-tag").click()
    browser.find_element(By.ID, "push-tag").send_keys("console-test")
    Select(browser.find_element(By.ID, "push-environment")).select_by_value("sandbox")
    Select(browser.find_element(By.ID, "push-template")).select_by_value(str(template_id))
    browser.find_element(By.ID, "push-arg-0").send_keys("A-17")
    browser.find_element(By.ID, "push-arg-1").send_keys("小米手环")
    browser.find_element(By.ID, "push-badge").send_keys("1")
    custom = browser.find_element(By.ID, "push-custom")
    custom.send_keys('{"order": ')
    visible(browser, "#push-custom-error")  # invalid JSON is flagged while typing
    assert not browser.find_element(By.ID, "push-send").is_enabled()
    custom.send_keys("17}")
    wait(browser).until(lambda d: not d.find_elements(By.ID, "push-custom-error"))
    # The payload is the server's rendering (the preview, a moment after the last change).
    wait(browser).until(lambda d: '"order":17' in d.find_element(By.ID, "payload-preview").text)
    heading = browser.find_element(By.CSS_SELECTOR, "#apns-payload h3").text
    assert heading.lower() == "apns payload", "the payload is labelled with the service the server names"
    payload = browser.find_element(By.ID, "payload-preview").text
    counted = int(browser.find_element(By.ID, "payload-size").get_attribute("data-bytes"))
    assert counted == len(payload.encode()), "the counter counts UTF-8 bytes of the payload"
    assert json.loads(payload) == {"aps": {"alert": {"title": "订单 A-17 已发货", "body": "小米手环 正在路上 {ok}"}, "badge": 1}, "order": 17}
    screenshot(browser, "10-push-compose")

    browser.find_element(By.ID, "push-send").click()
    text_in(browser, "main h1", "Message #")
    shared["message_id"] = int(browser.find_element(By.CSS_SELECTOR, "main h1").text.split("#")[1])
    # Follow it live until the delivered count reaches the device count.
    wait(browser, 60).until(lambda d: d.find_element(By.ID, "follow-status").get_attribute("data-delivered") == str(DEVICE_COUNT))
    visible(browser, "#follow-done", timeout=30)
    payload_bytes = browser.find_element(By.ID, "follow-payload-size").text
    assert f"{counted} /" in payload_bytes.replace(",", ""), "the server rendered the payload the counter counted"
    screenshot(browser, "11-push-delivered")

    go(browser, gateway, "monitor")
    visible(browser, f"#monitor-recent tr[data-message='{shared['message_id']}']")
    screenshot(browser, "12-monitor-after-push")
    go(browser, gateway, f"devices/{tokens[0]}")
    text_in(browser, "#last-delivery", f"#{shared['message_id']}")


def test_failing_credentials_are_shown_prominently(browser, gateway, credentials_dir):
    ensure_credentials(gateway, credentials_dir)
    # APNs refusing a credential is the sender's business (and its tests'); here the row is
    # marked as the sender marks it, and the console must put it in front of the operator.
    with sqlite3.connect(gateway.directory / "tuisong.db", timeout=10) as db:
        db.execute("UPDATE channel_credentials SET status = 'failing', status_reason = 'BadCertificate' "
                   "WHERE json_extract(options, '$.kind') = 'p12'")
    go(browser, gateway, "monitor")
    banner = visible(browser, "#failing-credentials")
    assert "BadCertificate" in banner.text and "订单助手 Orders" in banner.text
    assert banner.get_attribute("role") == "alert"
    # First thing on the page after the heading.
    first = browser.execute_script("return document.querySelector('#monitor-alerts').firstElementChild.id")
    assert first == "failing-credentials"
    screenshot(browser, "13-monitor-failing-credential")
    go(browser, gateway, "credentials")
    row = visible(browser, "#credentials-table tr[data-kind='p12']")
    assert "BadCertificate" in row.text


def test_language_toggle_switches_to_chinese_and_back(browser, gateway):
    go(browser, gateway, "monitor")
    browser.find_element(By.ID, "lang-toggle-top").click()
    text_in(browser, "main h1", "投递监控")
    assert browser.find_element(By.CSS_SELECTOR, "#sidenav a[data-route='devices']").text == "设备"
    assert browser.execute_script("return document.documentElement.lang") == "zh-CN"
    screenshot(browser, "14-monitor-zh")
    go(browser, gateway, "push")
    screenshot(browser, "15-push-zh")
    browser.find_element(By.ID, "lang-toggle-top").click()
    text_in(browser, "main h1", "Test push")


def test_keyboard_reaches_the_skip_link_and_navigation(browser, gateway):
    go(browser, gateway, "monitor")  # logged in (this test may run on its own)
    browser.get("about:blank")  # a fresh document: focus starts at the top
    go(browser, gateway, "apps")
    ActionChains(browser).send_keys(Keys.TAB).perform()
    active = browser.switch_to.active_element
    assert active.get_attribute("class") == "skip-link"
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    assert browser.switch_to.active_element.get_attribute("id") == "main"
    assert browser.execute_script("return location.hash") == "#/apps", "the skip link does not change the route"
    ActionChains(browser).send_keys(Keys.TAB).perform()
    assert browser.switch_to.active_element.tag_name in ("a", "input", "button", "select")
    # Every form control on the pages has a label.
    for route in ("apps", f"apps/{ensure_app(gateway)}", "templates/new", "devices", "push", "credentials"):
        go(browser, gateway, route)
        unlabeled = browser.execute_script("""
            return [...document.querySelectorAll('main input, main select, main textarea')]
              .filter(el => el.type !== 'hidden' && !el.labels?.length && !el.getAttribute('aria-label'))
              .map(el => el.outerHTML);""")
        assert unlabeled == [], f"{route}: {unlabeled}"


def test_narrow_screen_has_no_horizontal_scroll(gateway):
    # What a person on a phone sees: no page is wider than the screen. The viewport's exact
    # width is the browser build's business (Chromium 156 reports 391 for a 390 px emulation).
    app_id, template_id = ensure_app(gateway), ensure_template(gateway)
    tokens, message_id = ensure_devices(gateway), ensure_message(gateway)
    driver = make_driver(390, 844)
    try:
        driver.get(gateway.base + "/")
        visible(driver, "#login-password").send_keys(ADMIN_PASSWORD, Keys.ENTER)
        visible(driver, "#topbar")
        routes = ["monitor", "apps", f"apps/{app_id}", "credentials", f"templates/{template_id}",
                  "devices", f"devices/{tokens[0]}", "push", f"push/{message_id}"]
        for route in routes:
            go(driver, gateway, route)
            time.sleep(0.3)
            viewport, content = driver.execute_script(
                "const e = document.documentElement; return [e.clientWidth, e.scrollWidth]")
            assert viewport <= 420, f"the phone emulation is in effect ({viewport} px)"
            assert content <= viewport, f"{route} scrolls sideways: {content} px of content in {viewport} px"
            screenshot(driver, "narrow-" + route.replace("/", "-"))
        assert browser_errors(driver) == []
    finally:
        driver.quit()


def test_logout_returns_to_login_and_the_session_is_gone(browser, gateway):
    go(browser, gateway, "monitor")
    browser.find_element(By.ID, "logout").click()
    visible(browser, "#login-password")
    assert session_cookie(browser) is None
    browser.get(f"{gateway.base}/#/apps")
    visible(browser, "#login-password")
    screenshot(browser, "16-logged-out")
    assert browser_errors(browser) == []
