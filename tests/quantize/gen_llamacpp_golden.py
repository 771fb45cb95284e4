#!/usr/bin/env python3
"""Records what llama.cpp's own quantizer (llama_model_quantize, through the llama-cpp-python package)
writes for ../shared/models/stories260K.gguf at every file type `tinfer quantize` targets: per tensor,
its GGML type and the first 16 hex digits of the SHA-256 of its data. test_quantize_gguf.py checks that every tensor to which
tinfer and llama.cpp give the same type holds the same bytes (plain RTN is ggml's reference quantizer,
bit for bit), and that tinfer's fallbacks for stories260K's 64- and 172-element rows match llama.cpp's
where the recipes agree. Run once at development time (tests never import llama_cpp):

    python3 -m venv /tmp/llvenv && /tmp/llvenv/bin/pip install numpy gguf llama-cpp-python
    /tmp/llvenv/bin/python tests/quantize/gen_llamacpp_golden.py [--shared ../shared]
"""
import argparse
import ctypes
import hashlib
import json
import os
import tempfile

import llama_cpp
from gguf import GGUFReader

# tinfer --type -> llama_ftype (the _M mixes for the K types, as general.file_type records them)
FTYPES = {"f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9, "q2_k": 10, "q3_k": 12,
          "q4_k": 15, "q5_k": 17, "q6_k": 18, "bf16": 32}

ap = argparse.ArgumentParser()
ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
args = ap.parse_args()
src = os.path.join(args.shared, "models/stories260K.gguf")
out = {"source": "stories260K.gguf", "llama_cpp_python": llama_cpp.__version__, "types": {}}
with tempfile.TemporaryDirectory() as tmp:
    for name, ftype in FTYPES.items():
        p = llama_cpp.llama_model_quantize_default_params()
        p.ftype = ftype
        p.nthread = 2
        dst = os.path.join(tmp, name + ".gguf")
        rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(p))
        assert rc == 0, (name, rc)
        out["types"][name] = {t.name: [t.tensor_type.name.lower(), hashlib.sha256(t.data.tobytes()).hexdigest()[:16]]
                              for t in GGUFReader(dst).tensors}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data/llamacpp_stories260K.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")
print("wrote", path)
