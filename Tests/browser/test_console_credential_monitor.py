"""The console's APNs upload and the monitor's failing credentials (issue #40 item 10, #41
items 5 and 6): a .p8 key is uploaded for both environments by default, uploading the same
key again ("try again") answers the credential saved before instead of adding a second, and
the monitor counts only the credentials failing now, each code with its service's meaning, at
1400 and 390 px."""

import base64
import sqlite3
import subprocess

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from conftest import AdminClient, make_driver, screenshot
from test_console import go, visible, wait
from test_console_android import choose_app

APP_NAME = "监控 Monitor"


@pytest.fixture(scope="module")
def app(gateway):
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("POST", "/apps", {"name": APP_NAME, "bundle_id": "com.example.monitor"})
    assert status == 201, data
    return {"id": data["app"]["id"], "name": APP_NAME}


@pytest.fixture(scope="module")
def p8(tmp_path_factory):
    path = tmp_path_factory.mktemp("p8") / "AuthKey_MONITOR123.p8"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", str(path)], check=True, capture_output=True, timeout=60)
    return path


def upload_key(browser, p8):
    browser.find_element(By.ID, "cred-kind-p8").click()
    browser.find_element(By.ID, "cred-file").send_keys(str(p8))
    for element_id, value in (("cred-key-id", "MONITOR123"), ("cred-team-id", "TEAM123456")):
        element = browser.find_element(By.ID, element_id)
        element.clear()
        element.send_keys(value)
    browser.find_element(By.ID, "cred-upload-submit").click()


def test_a_key_serves_both_environments_and_uploading_it_again_adds_nothing(browser, gateway, app, p8):
    choose_app(browser, gateway, "credentials", app)
    visible(browser, "#cred-upload-form")
    environment = Select(browser.find_element(By.ID, "cred-environment"))
    assert environment.first_selected_option.get_attribute("value") == "both"

    upload_key(browser, p8)
    banner = visible(browser, "#cred-upload-result .banner.ok")
    assert banner.get_attribute("data-existing") == "false"
    assert "Both (sandbox and production)" in banner.text
    row = visible(browser, "#credentials-table tr[data-kind='p8']")
    assert "Both (sandbox and production)" in row.text and "MONITOR123" in row.text
    credential_id = row.get_attribute("data-credential")

    # "Try again" with the same file: the one saved before is named, nothing is added.
    upload_key(browser, p8)
    banner = visible(browser, "#cred-upload-result .banner[data-existing='true']")
    assert f"#{credential_id}" in banner.text and "nothing new was added" in banner.text
    wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#credentials-table tbody tr")) == 1)
    screenshot(browser, "credential-upload-again")


def test_the_monitor_counts_only_what_is_failing_now_with_its_meaning(browser, gateway, app):
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200

    def add(body):
        status, data, _ = admin.call("POST", f"/apps/{app['id']}/channel-credentials", body)
        assert status == 201, data
        return data["id"]

    replaced = add({"channel": "xiaomi", "vendor_app_id": "com.example.monitor", "client_id": "2882303761517000001",
                    "client_secret": "Fq3Kz8wQm1+Yp2/Lx7Vb9A=="})
    add({"channel": "xiaomi", "vendor_app_id": "com.example.monitor", "client_id": "2882303761517000001",
         "client_secret": "Zz3Kz8wQm1+Yp2/Lx7Vb9A=="})
    huawei = add({"channel": "huawei", "vendor_app_id": "10086", "client_id": "10086",
                  "client_secret": "huawei-secret-1"})
    # Local mode's look-alike takes every credential added; here the rows are marked as the
    # transports mark a refusal: the replaced Xiaomi secret and the only Huawei client.
    with sqlite3.connect(gateway.directory / "tuisong.db", timeout=10) as db:
        db.execute("UPDATE channel_credentials SET status = 'failing', status_reason = '21301' WHERE id = ?",
                   (replaced,))
        db.execute("UPDATE channel_credentials SET status = 'failing', status_reason = '1101' WHERE id = ?",
                   (huawei,))

    for driver, name in ((browser, "wide"), (None, "phone")):
        driver = driver or make_driver(390, 844)
        try:
            go(driver, gateway, "monitor")
            banner = visible(driver, "#failing-credentials")
            items = banner.find_elements(By.CSS_SELECTOR, "li")
            assert "1 credential(s) failing" in banner.text, banner.text
            assert [item.get_attribute("data-channel") for item in items] == ["huawei"]
            assert "1101" in items[0].text
            # The service's name is its transport's declaration, not a list in the console.
            assert " · Huawei · " in items[0].text, items[0].text
            assert "client ID or client secret is wrong" in items[0].find_element(By.CSS_SELECTOR, ".meaning").text
            assert "21301" not in banner.text, "the replaced Xiaomi secret holds nothing"
            # The meaning wraps inside the banner rather than widening the page.
            overflow = driver.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"{name}: the page scrolls sideways by {overflow} px"
            screenshot(driver, f"monitor-failing-now-{name}")
            if driver is browser:
                # In Chinese the service's meaning is worded in Chinese too (#41 item 10).
                browser.find_element(By.ID, "lang-toggle-top").click()
                wait(browser).until(lambda d: "华为" in d.find_element(
                    By.CSS_SELECTOR, "#failing-credentials li .meaning").text)
                meaning = browser.find_element(By.CSS_SELECTOR, "#failing-credentials li .meaning").text
                assert "Client Secret 错误" in meaning and "wrong" not in meaning, meaning
                # ... and in Chinese its declared Chinese name (`displayNameZH`).
                item = browser.find_element(By.CSS_SELECTOR, "#failing-credentials li").text
                assert " · 华为 · " in item and "Huawei" not in item, item
                screenshot(browser, "monitor-failing-now-zh")
                browser.find_element(By.ID, "lang-toggle-top").click()
        finally:
            if driver is not browser:
                driver.quit()

    choose_app(browser, gateway, "credentials", app)
    row = visible(browser, f"#channel-credentials-table tr[data-channel-credential='{replaced}']")
    assert row.find_elements(By.CSS_SELECTOR, "[data-inactive]"), "the replaced one is shown not in use"
