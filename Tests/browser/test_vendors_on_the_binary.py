"""The IM vendors through the shipped binary: `tuisong serve` on its embedded default config
(every provider mounted), a client written here the way Tencent's and Easemob's server SDKs
call (Tencent: no Content-Type, a UserSig made by this file's own TLSSigAPIv2; Easemob: a
client_credentials token, Content-Type on every call), and the bundled APNs mock delivering.

The Swift suites drive every call and rule against the gateway in-process; this checks that
the binary an operator runs mounts both vendors, configured from the console's API alone, and
delivers their messages.
"""

import base64
import hashlib
import hmac
import json
import subprocess
import time
import urllib.parse
import zlib

import pytest

SDKAPPID = 1400000123
TENCENT_KEY = "tencent-smoke-key-5bd2850fff3e"
EASEMOB_SECRET = "YXA6-easemob-smoke-secret"
BOB_TOKEN = "b0" * 32
CAROL_TOKEN = "c1" * 32


def user_sig(identifier, expire=86400):
    """TLSSigAPIv2.genUserSig, written from Tencent's description, not from the plugin."""
    now = int(time.time())
    content = (f"TLS.identifier:{identifier}\nTLS.sdkappid:{SDKAPPID}\n"
               f"TLS.time:{now}\nTLS.expire:{expire}\n")
    sig = base64.b64encode(hmac.new(TENCENT_KEY.encode(), content.encode(), hashlib.sha256).digest()).decode()
    document = {"TLS.ver": "2.0", "TLS.identifier": identifier, "TLS.sdkappid": SDKAPPID,
                "TLS.expire": expire, "TLS.time": now, "TLS.sig": sig}
    packed = base64.b64encode(zlib.compress(json.dumps(document).encode())).decode()
    return packed.replace("+", "*").replace("/", "-").replace("=", "_")


def p8_upload(tmp_path, selector=None):
    key = tmp_path / f"AuthKey-{selector or 'default'}.p8"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-out", str(key)], check=True, capture_output=True, timeout=60)
    body = {"kind": "p8", "environment": "sandbox", "key_id": "SMOKE12345", "team_id": "TEAM123456",
            "file": base64.b64encode(key.read_bytes()).decode()}
    if selector is not None:
        body["selector"] = selector
    return body


def finished_message(admin, app_id, vendor, timeout=30):
    """The app's newest message of `vendor`, once it is finished."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, data, _ = admin.call("GET", f"/messages?app={app_id}&limit=5")
        assert status == 200, data
        mine = [m for m in data["messages"] if m["vendor"] == vendor]
        if mine:
            status, message, _ = admin.call("GET", f"/messages/{mine[0]['id']}")
            if message.get("finished"):
                return message
        time.sleep(0.2)
    pytest.fail(f"no finished {vendor} message within {timeout} s")


def test_tencent_app_server_and_device_calls(gateway, admin, tmp_path):
    status, data, _ = admin.call("POST", "/apps", {
        "name": "IM 腾讯", "bundle_id": "com.example.tencent",
        "vendors": {"tencent": {"sdkappid": str(SDKAPPID), "secret_key": TENCENT_KEY}}})
    assert status == 201, data
    app_id = data["app"]["id"]
    status, data, _ = admin.call("POST", f"/apps/{app_id}/credentials", p8_upload(tmp_path))
    assert status == 201, data

    def v4(path, identifier, body, sig=None, method="POST"):
        query = urllib.parse.urlencode({"sdkappid": SDKAPPID, "identifier": identifier,
                                        "usersig": sig or user_sig(identifier), "random": 4294967295,
                                        "contenttype": "json"}, safe="*-_")
        raw = json.dumps(body, ensure_ascii=False).encode()
        status, _, text = gateway.request(method, f"/v4/{path}?{query}", raw=raw)
        assert status == 200, text  # Tencent answers every call with 200
        return json.loads(text)

    for account, nick in (("alice", "Alice"), ("bob", "鲍勃")):
        reply = v4("im_open_login_svc/account_import", "administrator", {"UserID": account, "Nick": nick})
        assert reply["ActionStatus"] == "OK" and reply["ErrorCode"] == 0, reply
    check = v4("im_open_login_svc/account_check", "administrator", {"CheckItem": [{"UserID": "bob"}]}, method="GET")
    assert check["ResultItem"][0]["AccountStatus"] == "Imported", check

    # Bob's phone reports its token and goes to the background with 4 unread.
    assert v4("offline_push/set_token", "bob",
              {"Token": BOB_TOKEN, "BusiId": 0, "Environment": "sandbox"})["ActionStatus"] == "OK"
    assert v4("offline_push/report_background", "bob", {"C2CUnread": 4})["ActionStatus"] == "OK"
    state = v4("openim/querystate", "administrator", {"To_Account": ["bob"]})
    assert [(r["To_Account"], r["State"]) for r in state["QueryResult"]] == [("bob", "PushOnline")], state

    # A user's sig is no admin's, and a sig under another key is refused: in Tencent's words.
    refused = v4("openim/sendmsg", "bob", {"To_Account": "alice", "MsgRandom": 1, "MsgBody": []},
                 sig=user_sig("bob"))
    assert refused["ActionStatus"] == "FAIL" and refused["ErrorCode"] == 60010, refused
    garbage = v4("openim/sendmsg", "administrator", {}, sig="eJyrVkrLLFGyUjI0MlPSUcpMSS3KS8xJBQAwKgUg")
    assert garbage["ActionStatus"] == "FAIL" and garbage["ErrorCode"] != 0, garbage

    sent = v4("openim/sendmsg", "administrator", {
        "SyncOtherMachine": 2, "From_Account": "alice", "To_Account": "bob", "MsgRandom": 1287657,
        "MsgBody": [{"MsgType": "TIMCustomElem", "MsgContent": {
            "Data": "message", "Desc": "helloworld", "Ext": "www.qq.com", "Sound": "dingdong.aiff"}}]})
    assert sent["ActionStatus"] == "OK" and isinstance(sent["MsgTime"], int) and sent["MsgKey"], sent

    message = finished_message(admin, app_id, "tencent")
    assert message["counts"]["delivered"] == 1, message
    assert message["counts"]["failed"] == 0 and message["counts"]["held"] == 0, message


def test_easemob_app_server_binding_and_message(gateway, admin, tmp_path):
    status, data, _ = admin.call("POST", "/apps", {
        "name": "IM 环信", "bundle_id": "com.example.easemob",
        "vendors": {"easemob": {"org": "acme", "app_name": "chat", "client_id": "YXA6-smoke",
                                "client_secret": EASEMOB_SECRET}}})
    assert status == 201, data
    app_id = data["app"]["id"]
    status, data, _ = admin.call("POST", f"/apps/{app_id}/credentials", p8_upload(tmp_path, "smoke-notifier"))
    assert status == 201, data

    def call(method, path, body=None, token=None):
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        raw = json.dumps(body, ensure_ascii=False).encode() if body is not None else None
        status, _, text = gateway.request(method, f"/acme/chat/{path}", raw=raw, headers=headers)
        return status, json.loads(text) if text else None

    # A pair saved in the console is served within about a second.
    deadline = time.monotonic() + 10
    while True:
        status, reply = call("POST", "token", {"grant_type": "client_credentials", "client_id": "YXA6-smoke",
                                               "client_secret": EASEMOB_SECRET})
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200, reply
    token = reply["access_token"]
    assert isinstance(reply["expires_in"], int) and reply["expires_in"] > 0

    status, reply = call("POST", "users", [{"username": "dave", "password": "p1"},
                                          {"username": "carol", "password": "p2"}])
    assert status == 401 and reply["error"] == "unauthorized", reply
    status, reply = call("POST", "users", [{"username": "dave", "password": "p1"},
                                          {"username": "carol", "password": "p2"}], token=token)
    assert status == 200 and [e["username"] for e in reply["entities"]] == ["dave", "carol"], reply
    status, reply = call("PUT", "users/carol", {"nickname": "卡罗", "notification_display_style": 1}, token=token)
    assert status == 200, reply
    status, reply = call("PUT", "users/carol/push/binding",
                         {"device_id": "carol-phone", "device_token": CAROL_TOKEN, "notifier_name": "smoke-notifier"},
                         token=token)
    assert status == 200, reply

    status, reply = call("POST", "messages/users", {"from": "dave", "to": ["carol"], "type": "txt",
                                                    "body": {"msg": "早"}}, token=token)
    assert status == 200 and reply["data"]["carol"], reply
    message = finished_message(admin, app_id, "easemob")
    assert message["counts"]["delivered"] == 1, message
    status, reply = call("GET", "users/carol/offline_msg_count", token=token)
    assert status == 200, reply

    # Errors in Easemob's words, also for what the router answers itself.
    status, reply = call("GET", "users/nobody", token=token)
    assert status == 404 and reply["error"] == "service_resource_not_found", reply
    status, reply = call("POST", "messages/users", None, token="None")
    assert status == 401 and reply["error"] == "unauthorized", reply
