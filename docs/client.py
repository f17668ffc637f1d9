#!/usr/bin/env python3
"""A client of `simhashdb serve`, using only Python's standard library.

    python3 docs/client.py http://127.0.0.1:7700 [TOKEN]

It stores two pages, asks which stored pages are near-duplicates of a third,
makes the crawler's atomic decision for a fourth, reads one back, stores many
in one commit, asks which stored fingerprints lie near one, asks many queries
in one batch, lists the near pairs and the
clusters, exports every document, checks the index, deletes one and reads the
index's statistics. Every endpoint of docs/server.md but /healthz and
/metrics (plain text, for probes and Prometheus) has a method here.
"""
import json
import sys
import urllib.error
import urllib.request


class SimhashDB:
    def __init__(self, url, token=None):
        self.url = url.rstrip("/")
        self.token = token

    def _request(self, method, path, data):
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            return urllib.request.urlopen(req, timeout=300)
        except urllib.error.HTTPError as e:
            # The server answers errors as {"error": "..."}.
            raise RuntimeError(f"{method} {path}: {e.code}: {json.load(e)['error']}") from None

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        with self._request(method, path, data) as resp:
            return json.load(resp)

    def put(self, doc_id, text=None, fingerprint=None, name=""):
        body = {"name": name}
        if fingerprint is not None:
            body["fingerprint"] = fingerprint  # a string: "0x..." or decimal
        else:
            body["text"] = text  # fingerprinted with the index's options
        return self._call("PUT", f"/v1/documents/{doc_id}", body)

    def get(self, doc_id):
        return self._call("GET", f"/v1/documents/{doc_id}")

    def query(self, text, k=3):
        return self._call("POST", "/v1/query", {"text": text, "k": k})["matches"]

    def fingerprints(self, fingerprint, k=3):
        """The distinct stored fingerprints within k of one, nearest first,
        without their documents: [{"fp", "distance"}]."""
        return self._call("GET", f"/v1/fingerprints?fp={fingerprint}&k={k}")["fingerprints"]

    def insert_if_new(self, doc_id, text, name="", k=3):
        return self._call("POST", "/v1/insert-if-new", {"id": doc_id, "text": text, "name": name, "k": k})

    def delete(self, doc_id):
        return self._call("DELETE", f"/v1/documents/{doc_id}")

    def put_many(self, docs):
        """Stores many documents in one commit: all or none. docs are dicts
        {"id", "fingerprint" or "text", "name"}; the answer counts the
        stored and lists the rejected lines."""
        body = "".join(json.dumps(d) + "\n" for d in docs).encode()
        with self._request("POST", "/v1/documents", body) as resp:
            return json.load(resp)

    def batch(self, fingerprints, k=3):
        """Queries many fingerprints ("0x..." or decimal strings, or
        (qid, fingerprint) pairs); yields one answer a query, in order, as
        the server streams them."""
        lines = []
        for q in fingerprints:
            lines.append(f"{q[0]} {q[1]}" if isinstance(q, tuple) else str(q))
        body = ("\n".join(lines) + "\n").encode()
        with self._request("POST", f"/v1/batch?k={k}", body) as resp:
            for line in resp:
                answer = json.loads(line)
                if "error" in answer and "line" not in answer:
                    raise RuntimeError(f"batch: {answer['error']}")
                yield answer

    def stats(self):
        return self._call("GET", "/v1/stats")

    def _lines(self, path):
        with self._request("GET", path, None) as resp:
            for line in resp:
                yield json.loads(line)

    def export(self):
        """Yields every document, {"id", "name", "fp"}, as the server
        streams them."""
        return self._lines("/v1/export")

    def pairs(self, k=3):
        """Yields every pair of documents within k: {"a", "b", "distance"}."""
        return self._lines(f"/v1/pairs?k={k}")

    def clusters(self, k=3, method="components"):
        """Yields the clusters of documents within k of each other:
        {"size", "documents"}; method "star" puts every member within k of
        the first."""
        return self._lines(f"/v1/clusters?k={k}&method={method}")

    def check(self):
        """Verifies every checksum and cross-reference: {"ok", "report",
        "problems"}."""
        return self._call("POST", "/v1/check")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    db = SimhashDB(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    page = ("The quick brown fox jumps over the lazy dog while the cat watches "
            "from the window and the birds sing in the old oak tree near the river")
    db.put(101, text=page, name="https://a.example/fox")
    db.put(102, text="An entirely different page about the weather in the mountains today", name="https://b.example/")
    for m in db.query(page + " today", k=3):
        print("near-duplicate:", m["id"], m["name"], m["fp"], "distance", m["distance"])
    decision = db.insert_if_new(103, page, name="https://c.example/copy")
    print("inserted:", decision["inserted"], "duplicates:", [d["id"] for d in decision["duplicates"]])
    print("stored:", db.get(101))
    many = db.put_many([{"id": 200 + i, "fingerprint": hex(0x1234 << i), "name": f"doc {i}"} for i in range(5)]
                       + [{"id": 205, "fingerprint": hex(0x1235), "name": "doc 0, one bit off"}])
    print("stored in one commit:", many["stored"], "rejected:", many["rejected"])
    near = db.fingerprints(hex(0x1234), k=1)
    print("near fingerprints:", ", ".join(f"{n['fp']} {n['distance']}" for n in near))
    for answer in db.batch([("first", hex(0x1234)), hex(0x1234 << 1)], k=0):
        print("batch:", answer["qid"], [m["id"] for m in answer["matches"]])
    for pair in db.pairs(k=1):
        print("pair:", pair["a"]["id"], pair["b"]["id"], "distance", pair["distance"])
    for cluster in db.clusters(k=3):
        print("cluster of", cluster["size"])
    print("exported:", sum(1 for _ in db.export()))
    print("check ok:", db.check()["ok"])
    print("deleted:", db.delete(102)["deleted"])
    print("documents:", db.stats()["documents"])


if __name__ == "__main__":
    main()
