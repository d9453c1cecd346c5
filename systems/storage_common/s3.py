"""A small S3 client (AWS Signature Version 4, path-style, standard library only).

Enough for health checks and byte-for-byte tests of the stacks' S3 endpoints (Ceph RGW,
MinIO, the JuiceFS gateway): list buckets, create/delete a bucket, put/get/delete an object.
Every request signs its payload hash (no UNSIGNED-PAYLOAD), so a stack that corrupts a body
on upload rejects it.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import urllib.parse
from datetime import UTC, datetime


class S3Error(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: bytes):
        super().__init__(f"S3 {method} {path}: HTTP {status}: {body[:300].decode(errors='replace')}")
        self.status = status


def _sign(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


class S3Client:
    def __init__(self, endpoint: str, access_key: str, secret_key: str, region: str = "us-east-1",
                 timeout: float = 30.0):
        u = urllib.parse.urlsplit(endpoint)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"endpoint must be http://host:port, got {endpoint!r}")
        self.host, self.port = u.hostname, u.port or 80
        self.access_key, self.secret_key, self.region, self.timeout = access_key, secret_key, region, timeout

    def request(self, method: str, path: str, body: bytes = b"", query: dict | None = None,
                ok: tuple[int, ...] = (200,)) -> tuple[int, dict, bytes]:
        now = datetime.now(UTC)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload_hash = hashlib.sha256(body).hexdigest()
        host = f"{self.host}:{self.port}"
        canon_path = urllib.parse.quote(path, safe="/-_.~")
        q = sorted((query or {}).items())
        canon_query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                               for k, v in q)
        headers = {"host": host, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date}
        signed = ";".join(sorted(headers))
        canon_headers = "".join(f"{k}:{headers[k]}\n" for k in sorted(headers))
        canon = "\n".join([method, canon_path, canon_query, canon_headers, signed, payload_hash])
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canon.encode()).hexdigest()])
        k = _sign(("AWS4" + self.secret_key).encode(), day)
        for part in (self.region, "s3", "aws4_request"):
            k = _sign(k, part)
        signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
                                    f"SignedHeaders={signed}, Signature={signature}")
        headers["content-length"] = str(len(body))
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            conn.request(method, canon_path + (f"?{canon_query}" if canon_query else ""), body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if resp.status not in ok:
            raise S3Error(method, path, resp.status, data)
        return resp.status, dict(resp.getheaders()), data

    def list_buckets(self) -> bytes:
        return self.request("GET", "/")[2]

    def create_bucket(self, bucket: str) -> None:
        self.request("PUT", f"/{bucket}", ok=(200,))

    def delete_bucket(self, bucket: str) -> None:
        self.request("DELETE", f"/{bucket}", ok=(204, 200))

    def put_object(self, bucket: str, key: str, data: bytes) -> str:
        return self.request("PUT", f"/{bucket}/{key}", body=data)[1].get("ETag", "").strip('"')

    def get_object(self, bucket: str, key: str) -> bytes:
        return self.request("GET", f"/{bucket}/{key}")[2]

    def delete_object(self, bucket: str, key: str) -> None:
        self.request("DELETE", f"/{bucket}/{key}", ok=(204, 200))

    def healthy(self) -> bool:
        try:
            self.list_buckets()
            return True
        except (OSError, S3Error):
            return False
