"""The admin API's auth rules against the real `tuisong serve` binary: no session → 401 on
every path, a missing or wrong CSRF token → 403, and no secret in any answer or in the log."""

import base64
import json
import subprocess

from conftest import ADMIN_PASSWORD, AdminClient

SECRET = "vendor-secret-never-shown-8Kp"


def test_without_a_session_every_path_is_401(gateway):
    client = AdminClient(gateway)
    probes = [
        ("GET", "/session"), ("GET", "/apps"), ("POST", "/apps"), ("GET", "/apps/1"), ("PUT", "/apps/1"),
        ("DELETE", "/apps/1"), ("POST", "/apps/1/api-key"), ("GET", "/apps/1/credentials"),
        ("POST", "/apps/1/credentials"), ("GET", "/apps/1/templates"), ("GET", "/apps/1/devices"),
        ("POST", "/apps/1/push"), ("GET", "/messages/1"), ("GET", "/monitor"), ("POST", "/logout"),
        ("GET", "/does/not/exist"), ("DELETE", "/login"),
    ]
    for method, path in probes:
        status, data, headers = client.call(method, path, {} if method != "GET" else None)
        assert status == 401, f"{method} {path} → {status}"
        assert data["error"]["code"] == "unauthorized"
        assert headers["Cache-Control"] == "no-store"
    # A cookie that was never issued is no session.
    forged = {"Cookie": "tuisong_session=" + "A" * 43}
    status, _, _ = client.call("GET", "/apps", headers=forged)
    assert status == 401


def test_a_mutation_without_the_csrf_token_is_403(gateway):
    client = AdminClient(gateway)
    assert client.login()[0] == 200
    body = {"name": "csrf", "bundle_id": "com.example.csrf"}
    assert client.call("POST", "/apps", body, csrf=False)[0] == 403
    status, data, _ = client.call("POST", "/apps", body, csrf=False, headers={"X-CSRF-Token": "x" * 43})
    assert status == 403 and data["error"]["code"] == "csrf_failed"
    # Reads need only the cookie; the right token makes the write work.
    assert client.call("GET", "/apps")[0] == 200
    status, data, _ = client.call("POST", "/apps", body)
    assert status == 201
    assert client.call("DELETE", f"/apps/{data['app']['id']}", csrf=False)[0] == 403
    assert client.call("DELETE", f"/apps/{data['app']['id']}")[0] == 204


def test_the_login_form_cannot_be_posted_cross_site_as_a_form(gateway):
    # A cross-site form can only send form encodings; the login takes JSON alone.
    status, _, text = gateway.request(
        "POST", "/admin/api/login", raw=f"password={ADMIN_PASSWORD}".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 415, text


def test_no_secret_in_any_answer_or_in_the_log(gateway, tmp_path):
    client = AdminClient(gateway)
    assert client.login()[0] == 200
    # Every secret every registered vendor declares, each a distinct value.
    vendors, secrets = {"baidu": {"apikey": "AK-secrets"}}, []
    for vendor in client.call("GET", "/vendors")[1]["vendors"]:
        for field in vendor["fields"]:
            if field["secret"]:
                value = f"{SECRET}-{vendor['vendor']}-{field['key']}"
                vendors.setdefault(vendor["vendor"], {})[field["key"]] = value
                secrets.append(value)
    assert secrets, "Baidu declares its secret key"
    status, data, _ = client.call("POST", "/apps", {
        "name": "secrets", "bundle_id": "com.example.secrets", "vendors": vendors})
    assert status == 201, data
    app_id = data["app"]["id"]
    api_key = data["api_key"]

    assert client.call("GET", "/session")[1]["features"]["credentials"]
    key = tmp_path / "AuthKey.p8"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", str(key)], check=True, capture_output=True, timeout=30)
    pem = key.read_text()
    secrets.append(pem.splitlines()[1])  # a line of the key's base64
    status, data, _ = client.call("POST", f"/apps/{app_id}/credentials", {
        "kind": "p8", "environment": "sandbox", "key_id": "KEY1234567", "team_id": "TEAM123456",
        "file": base64.b64encode(pem.encode()).decode()})
    assert status == 201, data
    client.call("GET", f"/apps/{app_id}/credentials")

    for path in ("/apps", f"/apps/{app_id}", "/monitor", "/session", "/vendors", f"/apps/{app_id}/devices",
                 f"/apps/{app_id}/templates", "/messages"):
        assert client.call("GET", path)[0] == 200, path
    client.call("PUT", f"/apps/{app_id}", {"name": "secrets 2"})

    answers = "\n".join(f"{headers}\n{text}" for _, _, _, headers, text in client.transcript)
    for secret in secrets:
        assert secret not in answers
        assert json.dumps(secret)[1:-1] not in answers
    # The API key is shown once, in the answer that created it, and never again.
    assert all(api_key not in text for method, _, _, _, text in client.transcript if method == "GET")

    log = gateway.log_path.read_text()
    for secret in secrets + [ADMIN_PASSWORD, api_key]:
        assert secret not in log, "a secret reached the log"
