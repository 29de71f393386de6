#!/usr/bin/env python3
"""Creates the planned Secrets of one owner, once (ADR-072).

Usage: create.py plan.json
"""

import base64
import hashlib
import http.client
import json
import os
import secrets
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
API = "https://kubernetes.default.svc"
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def log(message):
    print(f"credentials: {message}", file=sys.stderr, flush=True)


def read(name):
    with open(os.path.join(SA_DIR, name), encoding="utf-8") as handle:
        return handle.read().strip()


TOKEN = read("token")
NAMESPACE = read("namespace")
CONTEXT = ssl.create_default_context(cafile=os.path.join(SA_DIR, "ca.crt"))


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:200]}")
        self.status = status


def api(method, path, body=None, content_type="application/json"):
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(API + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + TOKEN)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, context=CONTEXT, timeout=30) as response:
            raw = response.read()
    except urllib.error.HTTPError as error:
        raise ApiError(error.code, error.read().decode("utf-8", "replace")) from None
    return json.loads(raw) if raw else {}


def generate(length):
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def digest(value):
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:12]


def get_secret(name):
    try:
        return api("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}")
    except ApiError as error:
        if error.status == 404:
            return None
        raise


def adopt_external_secret(name):
    path = f"/apis/external-secrets.io/v1beta1/namespaces/{NAMESPACE}/externalsecrets/{name}"
    try:
        found = api("GET", path)
    except ApiError as error:
        if error.status == 404:
            return
        raise
    sources = found.get("spec", {}).get("dataFrom", [])
    if not any("generatorRef" in (s.get("sourceRef") or {}) for s in sources):
        log(f"ExternalSecret {name} is not generator-backed; stopping")
        sys.exit(3)
    api("DELETE", path, {"propagationPolicy": "Orphan"})
    for _ in range(60):
        try:
            api("GET", path)
        except ApiError as error:
            if error.status == 404:
                return
            raise
        time.sleep(1)
    raise SystemExit(f"ExternalSecret {name} did not go away")


def create_secret(owner, planned):
    keys = planned["keys"]
    data = {}
    for key, spec in keys.items():
        value = generate(int(spec.get("length", 32)))
        data[key] = base64.b64encode(value.encode("utf-8")).decode("ascii")
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": planned["name"], "labels": {"app.kubernetes.io/part-of": owner}},
        "type": "Opaque",
        "data": data,
    }
    try:
        api("POST", f"/api/v1/namespaces/{NAMESPACE}/secrets", body)
        log(f"created {planned['name']}")
        return
    except ApiError as error:
        if error.status != 409:
            raise
    existing = get_secret(planned["name"]) or {}
    patch_existing(owner, planned, existing)


def patch_existing(owner, planned, existing):
    metadata = existing.get("metadata", {})
    have = existing.get("data") or {}
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": metadata.get("resourceVersion")}]
    for key, spec in planned["keys"].items():
        if key not in have:
            value = generate(int(spec.get("length", 32)))
            encoded = base64.b64encode(value.encode("utf-8")).decode("ascii")
            ops.append({"op": "add", "path": f"/data/{key}", "value": encoded})
    if "app.kubernetes.io/part-of" not in (metadata.get("labels") or {}):
        ops.append({"op": "add", "path": "/metadata/labels/app.kubernetes.io~1part-of", "value": owner})
    if len(ops) == 1:
        log(f"{planned['name']} needs nothing")
        return
    api(
        "PATCH",
        f"/api/v1/namespaces/{NAMESPACE}/secrets/{planned['name']}",
        ops,
        content_type="application/json-patch+json",
    )


def probe_valkey(host, password, port=6379):
    with socket.create_connection((host, port), timeout=5) as conn:
        conn.sendall(b"AUTH " + password.encode("utf-8") + b"\r\n")
        answer = conn.recv(64)
    if answer.startswith(b"+OK"):
        return True
    if answer.startswith(b"-WRONGPASS"):
        return False
    return None


def health():
    conn = http.client.HTTPSConnection("kubernetes.default.svc", context=CONTEXT, timeout=10)
    conn.request("GET", "/readyz", headers={"Authorization": "Bearer " + TOKEN})
    return conn.getresponse().status == 200


def main(argv):
    with open(argv[1], encoding="utf-8") as handle:
        plan = json.load(handle)
    if not health():
        raise SystemExit("the API server is not ready")
    for planned in plan["secrets"]:
        adopt_external_secret(planned["name"])
        create_secret(plan["owner"], planned)
    for generator in plan.get("retiredGenerators", []):
        try:
            api("DELETE", f"/apis/generators.external-secrets.io/v1alpha1/namespaces/{NAMESPACE}/passwords/{generator}")
        except ApiError as error:
            if error.status != 404:
                raise
    log("done " + digest(json.dumps(plan, sort_keys=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
