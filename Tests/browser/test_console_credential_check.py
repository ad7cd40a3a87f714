"""The console's credential checks say what was checked (issue #40 item 9, #41 item 3): a
client id with a right-to-left mark is refused at its field with the translated code, and in
local mode a credential added is "Local mode: not checked", never "the service signed it in"."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from conftest import AdminClient, screenshot
from test_console import visible
from test_console_android import choose_app

XIAOMI_SECRET = "Fq3Kz8wQm1+Yp2/Lx7Vb9A=="


@pytest.fixture(scope="module")
def app(gateway):
    admin = AdminClient(gateway)
    assert admin.login()[0] == 200
    status, data, _ = admin.call("POST", "/apps", {"name": "凭证检查 Checks", "bundle_id": "com.example.checks"})
    assert status == 201, data
    return {"id": data["app"]["id"], "name": "凭证检查 Checks"}


def fill_xiaomi(browser, client_id):
    Select(visible(browser, "#android-channel")).select_by_value("xiaomi")
    for element_id, value in (("android-app-id", "com.example.checks"), ("android-client-id", client_id),
                              ("android-client-secret", XIAOMI_SECRET)):
        element = browser.find_element(By.ID, element_id)
        element.clear()
        element.send_keys(value)
    browser.find_element(By.ID, "android-cred-submit").click()


def test_a_hostile_client_id_is_refused_and_local_mode_claims_no_sign_in(browser, gateway, app):
    choose_app(browser, gateway, "credentials", app)
    visible(browser, "#android-cred-form")

    fill_xiaomi(browser, "2882\u202e303")
    banner = visible(browser, "#android-cred-result .banner.bad")
    assert banner.get_attribute("data-code") == "invalid_client_id"
    assert banner.get_attribute("data-field") == "client_id"
    assert "letters, digits" in visible(browser, "#android-client-id-error").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#channel-credentials-table tr[data-channel='xiaomi']")

    fill_xiaomi(browser, "2882303761517000000")
    banner = visible(browser, "#android-cred-result .banner.warn")
    assert banner.get_attribute("data-check") == "not_checked"
    check = browser.find_element(By.ID, "android-cred-check").text
    assert check.startswith("Local mode: not checked"), check
    assert "signed it in" not in banner.text
    visible(browser, "#channel-credentials-table tr[data-channel='xiaomi']")
    assert XIAOMI_SECRET not in browser.page_source
    screenshot(browser, "credential-check-local-mode")
