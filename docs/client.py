#!/usr/bin/env python3
"""A client of `simhashdb serve`, using only Python's standard library.

    python3 docs/client.py http://127.0.0.1:7700 [TOKEN]

It stores two pages, asks which stored pages are near-duplicates of a third,
makes the crawler's atomic decision for a fourth, and reads one back.
"""
import json
import sys
import urllib.error
import urllib.request


class SimhashDB:
    def __init__(self, url, token=None):
        self.url = url.rstrip("/")
        self.token = token

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as e:
            # The server answers errors as {"error": "..."}.
            raise RuntimeError(f"{method} {path}: {e.code}: {json.load(e)['error']}") from None

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

    def insert_if_new(self, doc_id, text, name="", k=3):
        return self._call("POST", "/v1/insert-if-new", {"id": doc_id, "text": text, "name": name, "k": k})


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


if __name__ == "__main__":
    main()
