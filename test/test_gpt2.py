"""GPT-2-family import and export (data/gpt2.h) checked against the real libraries:
transformers (GPT2LMHeadModel, AutoTokenizer), tokenizers and safetensors. Nothing can be
downloaded here, so the test makes its own models and tokenizers: random tiny GPT2Configs
saved with save_pretrained (F32, F16, BF16), a byte-level BPE trained with tokenizers on
CUDABench's programs (../shared/cudabench; a small built-in corpus when absent), an llm.c
checkpoint and tokenizer written from them. Drives test/test_gpt2 (the C side).
Prints PASS/FAIL/SKIP lines; exit 1 on any FAIL.
    test/test_gpt2.py [--tmp DIR] [--seed N]
"""
import json, os, random, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "test_gpt2")
CUDABENCH = os.path.join(HERE, "..", "..", "shared", "cudabench", "cudabench-dev.jsonl")
failed = 0


def report(ok, name, detail=""):
    global failed
    failed += not ok
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""))


try:
    import numpy as np
    import torch
    import safetensors, tokenizers, transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, AutoTokenizer
    transformers.logging.set_verbosity_error()
except ImportError as e:
    print("SKIP gpt2_import_export: %s: needs numpy, torch and from PyPI 'transformers<4.46' tokenizers safetensors"
          % e)
    sys.exit(0)


def tool(*args, check=True):
    r = subprocess.run([TOOL] + [str(a) for a in args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("test_gpt2 %s: %s" % (" ".join(map(str, args)), (r.stderr or r.stdout).strip()))
    return r


def write_texts(path, texts):
    with open(path, "wb") as f:
        for t in texts:
            b = t.encode("utf-8")
            f.write(struct.pack("<I", len(b)) + b)


def read_ids(path):
    data, out, at = open(path, "rb").read(), [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        out.append(list(struct.unpack_from("<%di" % n, data, at + 4)))
        at += 4 + 4 * n
    return out


def c_logits(path, ids, tmp):
    np.asarray(ids, dtype=np.int32).tofile(os.path.join(tmp, "ids.bin"))
    tool("logits", path, os.path.join(tmp, "ids.bin"), os.path.join(tmp, "logits.bin"))
    return np.fromfile(os.path.join(tmp, "logits.bin"), dtype=np.float32).reshape(len(ids), -1)


def hf_logits(model, ids):
    with torch.no_grad():
        return model.double()(torch.tensor([[int(i) for i in ids]])).logits[0].numpy()


def rel_err(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def programs():
    if os.path.exists(CUDABENCH):
        return [json.loads(l)["bench.cu"] for l in open(CUDABENCH)], "CUDABench's programs"
    return None, None


def random_unicode(rng, n):
    """Text mixing ASCII, code, every kind of whitespace, letters and numbers of many scripts,
    combining marks, emoji and random code points (no surrogates)."""
    pools = ["abcXYZ 012'sre've", " \t\n\r\x0b\x0c\x1c\x1d\x85\xa0\u1680\u2000\u2009\u2028\u2029\u202f\u205f\u3000",
             "éàüßØœÆ", "абвгдЖЯ", "αβγΩ", "汉字かなカナ한국어", "٠١٢٣४५६७১২", "Ⅻⅻ½¾²³", "\u0301\u0308\u093f",
             "😀🚀👍🏽", "{}()[];<<<>>>->::", "'S'T'RE'LL'D"]
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.85:
            out.append(rng.choice(rng.choice(pools)))
        else:
            c = rng.randrange(0x20, 0x110000)
            out.append(chr(c if not 0xD800 <= c < 0xE000 else 0x41))
    return "".join(out)


def tiny_config(vocab, **kw):
    return GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=vocab, n_positions=64, **kw)


def main():
    tmp = sys.argv[sys.argv.index("--tmp") + 1] if "--tmp" in sys.argv else tempfile.mkdtemp(prefix="cuset_gpt2.")
    os.makedirs(tmp, exist_ok=True)
    os.environ["OMP_NUM_THREADS"] = "1"  # tiny models: threads only wait for each other on a busy machine
    torch.set_num_threads(1)
    print("  transformers %s, tokenizers %s, safetensors %s, torch %s" % (
        transformers.__version__, tokenizers.__version__, safetensors.__version__, torch.__version__))
    # fresh models, ids and texts each run; --seed N reproduces one
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else random.randrange(1 << 30)
    print("  seed %d (test/test_gpt2.py --seed %d reproduces)" % (seed, seed))
    rng = random.Random(seed)
    torch.manual_seed(seed)

    # 1. logits of imported models: F32, F16, BF16 against transformers in float64
    for dtype in ("float32", "float16", "bfloat16"):
        d = os.path.join(tmp, "tiny_" + dtype)
        model = GPT2LMHeadModel(tiny_config(100)).eval()
        model.to(getattr(torch, dtype)).save_pretrained(d, safe_serialization=True)
        ref_model = GPT2LMHeadModel.from_pretrained(d, torch_dtype=torch.float32).eval()
        ids = [rng.randrange(100) for _ in range(40)]
        e = rel_err(c_logits(d, ids, tmp), hf_logits(ref_model, ids))
        report(e < 1e-4, "gpt2_logits_%s" % dtype, "max relative error %.2e (40 tokens, 2 layers)" % e)

    # 2. a byte-level BPE trained by tokenizers on CUDABench: the same ids, decode(encode(x)) == x
    texts, what = programs()
    if texts is None:
        print("SKIP gpt2_tokenizer_cudabench: %s is absent" % CUDABENCH)
        texts = ["__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; } // it's done\n" * 20]
        what = "a built-in program"
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=2000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                       special_tokens=["<|endoftext|>"], show_progress=False))
    tokdir = os.path.join(tmp, "bpe")
    os.makedirs(tokdir, exist_ok=True)
    tok.save(os.path.join(tokdir, "tokenizer.json"))
    uni = [random_unicode(rng, rng.randrange(1, 300)) for _ in range(300)]
    for name, group in (("cudabench", texts), ("unicode", uni)):
        write_texts(os.path.join(tmp, "texts.bin"), group)
        r = tool("encode", tokdir, os.path.join(tmp, "texts.bin"), os.path.join(tmp, "ids.out"), check=False)
        got = read_ids(os.path.join(tmp, "ids.out")) if r.returncode == 0 else []
        want = [tok.encode(t).ids for t in group]
        diff = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        ok = r.returncode == 0 and len(got) == len(group) and not diff
        report(ok, "gpt2_tokenizer_%s" % name, "%d texts (%s), %d tokens, ids equal, roundtrip exact" % (
            len(group), what if name == "cudabench" else "random Unicode", sum(map(len, want))) if ok else
            "%s; first different text %r" % (r.stdout.strip() or r.stderr.strip(), group[diff[0]][:80] if diff else ""))

    # 3. vocab.json + merges.txt (GPT-2's original files) and llm.c's tokenizer give the same ids
    vm = os.path.join(tmp, "bpe_vm")
    os.makedirs(vm, exist_ok=True)
    tok.model.save(vm)
    sample = texts[:20] + uni[:50]
    write_texts(os.path.join(tmp, "texts.bin"), sample)
    want = [tok.encode(t).ids for t in sample]
    tool("encode", vm, os.path.join(tmp, "texts.bin"), os.path.join(tmp, "ids.out"))
    report(read_ids(os.path.join(tmp, "ids.out")) == want, "gpt2_tokenizer_vocab_merges", "%d texts" % len(sample))

    # 4. an llm.c checkpoint (version 3, float32) and tokenizer file written from a HF model
    V = tok.get_vocab_size()
    d = os.path.join(tmp, "hf")
    model = GPT2LMHeadModel(tiny_config(V)).eval()
    model.save_pretrained(d)
    tok.save(os.path.join(d, "tokenizer.json"))
    llmc = os.path.join(tmp, "llmc")
    os.makedirs(llmc, exist_ok=True)
    write_llmc(model, V, os.path.join(llmc, "gpt2_124M.bin"))
    inv = {i: s for s, i in tok.get_vocab().items()}
    b2u = byte_decoder()
    with open(os.path.join(llmc, "gpt2_tokenizer.bin"), "wb") as f:
        f.write(struct.pack("<256I", *([20240328, 2, V, tok.token_to_id("<|endoftext|>")] + [0] * 252)))
        for i in range(V):
            b = inv[i].encode() if inv[i] == "<|endoftext|>" else bytes(b2u[c] for c in inv[i])
            f.write(bytes([len(b)]) + b)
    ids = tok.encode(texts[0][:300]).ids[:60]
    e = rel_err(c_logits(os.path.join(llmc, "gpt2_124M.bin"), ids, tmp), hf_logits(model, ids))
    report(e < 1e-4, "llmc_checkpoint_logits", "max relative error %.2e" % e)
    r = tool("encode", os.path.join(llmc, "gpt2_tokenizer.bin"), os.path.join(tmp, "texts.bin"), os.path.join(tmp, "ids.out"),
             check=False)
    got = read_ids(os.path.join(tmp, "ids.out")) if r.returncode == 0 else None
    report(got == want, "llmc_tokenizer_ids", "%d texts, merges recovered from the ids" % len(sample))

    # 5. import puts the model in our ids: the same logits, columns permuted
    tool("perm", d, os.path.join(tmp, "perm.bin"))
    perm = np.fromfile(os.path.join(tmp, "perm.bin"), dtype=np.int32)
    ids = tok.encode(texts[2][:300]).ids[:50]
    out = os.path.join(tmp, "exported")
    r = tool("export", d, out, check=False)
    report(r.returncode == 0 and "parameters bit-equal, tokenizer equal" in r.stdout and "version 2, tokenizer equal"
           in r.stdout, "gpt2_export_reimport", " | ".join((r.stdout + r.stderr).strip().splitlines()))
    if r.returncode == 0:
        e = rel_err(c_logits(out, perm[ids], tmp)[:, perm], hf_logits(model, ids))
        report(e < 1e-4, "gpt2_import_permuted", "our ids: logits[:, perm] vs transformers' in the file's ids %.2e" % e)
        # transformers loads the export and gives the C logits and ids
        check_exported(out, d, texts[:10] + uni[:30], tmp, "gpt2_export_transformers")

    # 6. import -> fine-tune 3 steps -> export -> re-import unchanged; transformers agrees
    ft = os.path.join(tmp, "finetuned")
    r = tool("finetune", d, ft, 3, check=False)
    report(r.returncode == 0 and "parameters bit-equal" in r.stdout, "gpt2_finetune_export_reimport",
           " | ".join(r.stdout.strip().splitlines()) or r.stderr.strip())
    if r.returncode == 0:
        ids = tok.encode(texts[1][:300]).ids[:50]
        moved = rel_err(hf_logits(GPT2LMHeadModel.from_pretrained(ft).eval(), perm[ids])[:, perm], hf_logits(model, ids))
        ids = perm[ids]
        e = rel_err(c_logits(ft, ids, tmp), hf_logits(GPT2LMHeadModel.from_pretrained(ft).eval(), ids))
        report(e < 1e-4 and moved > 1e-3, "gpt2_finetune_transformers",
               "C vs transformers %.2e; fine-tuning moved the logits by %.2e" % (e, moved))

    # 7. the project's own tokenizer exported as tokenizer.json
    ct = os.path.join(tmp, "cuset_tok")
    write_texts(os.path.join(tmp, "texts.bin"), texts)
    r = tool("cuset", os.path.join(tmp, "texts.bin"), 1024, ct, os.path.join(tmp, "ids.out"), check=False)
    report(r.returncode == 0 and "parameters bit-equal, tokenizer equal" in r.stdout, "cuset_export_reimport",
           " | ".join((r.stdout + r.stderr).strip().splitlines()))
    if r.returncode == 0:
        got = read_ids(os.path.join(tmp, "ids.out"))
        hf = AutoTokenizer.from_pretrained(ct)
        want = [hf(t)["input_ids"] for t in texts]
        diff = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
        report(not diff, "cuset_tokenizer_export", "%d programs, %d tokens: AutoTokenizer gives the C ids" % (
            len(texts), sum(map(len, got))) if not diff else "program %d differs: %s" % (
            diff[0], first_diff(got[diff[0]], want[diff[0]], hf)))
        ids = got[0][:60]
        e = rel_err(c_logits(ct, ids, tmp), hf_logits(GPT2LMHeadModel.from_pretrained(ct).eval(), ids))
        report(e < 1e-4, "cuset_model_export_transformers", "max relative error %.2e" % e)

    # 8. train --init (a HF directory, an llm.c .bin) -> checkpoint -> gen --export-hf -> transformers
    train_and_export(tmp, texts, llmc, ct)

    # 9. bad inputs: each refused with a message that names the problem
    bad_inputs(d, tmp, V)
    return 1 if failed else 0


def train_and_export(tmp, texts, llmc, own):
    root = os.path.dirname(HERE)
    train, gen = os.path.join(root, "train"), os.path.join(root, "gen")
    if not (os.access(train, os.X_OK) and os.access(gen, os.X_OK)):
        print("SKIP gpt2_train_init: build train and gen first (make)")
        return
    d = os.path.join(tmp, "hf512")  # a context long enough for a prompt and some target
    GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=512, vocab_size=2000)).save_pretrained(d)
    import shutil
    shutil.copy(os.path.join(tmp, "bpe", "tokenizer.json"), d)
    data = os.path.join(tmp, "tasks.jsonl")
    with open(data, "w") as f:
        for t in texts[:24]:
            f.write(json.dumps({"prompt": "Write the CUDA program.\n", "completion": t[:500]}) + "\n")
    for name, src in (("hf", d), ("llmc", os.path.join(llmc, "gpt2_124M.bin")), ("own_tokenizer", own)):
        ckpt, out = os.path.join(tmp, name + ".ckpt"), os.path.join(tmp, name + "_export")
        seq = "256" if name == "hf" else "64"
        steps = [[train, "--init", src, "--data", data, "--steps", "2", "--batch", "2", "--seq", seq, "--ckpt", ckpt,
                  "--threads", "1", "--val-frac", "0.1"], [gen, "--model", ckpt, "--info"], [gen, "--model", ckpt, "--export-hf", out]]
        logs = []
        for cmd in steps:
            r = subprocess.run(cmd, capture_output=True, text=True)
            logs.append((r.stdout + r.stderr).strip())
            if r.returncode != 0:
                report(False, "gpt2_train_init_%s" % name, "%s: %s" % (os.path.basename(cmd[0]), logs[-1][-300:]))
                break
        else:
            model = GPT2LMHeadModel.from_pretrained(out).eval()
            hf = AutoTokenizer.from_pretrained(out)
            ids = hf(texts[3][:400])["input_ids"][:50]
            e = rel_err(c_logits(out, ids, tmp), hf_logits(model, ids))
            split = "tokenizer yes\n" if name == "own_tokenizer" else "tokenizer yes (GPT-2's pre-split)"
            ok = e < 1e-4 and split in logs[1] + "\n" and ids == c_encode(out, [texts[3][:400]], tmp)[0][:50]
            report(ok, "gpt2_train_init_%s" % name, "train --init %s, 2 steps, gen --export-hf: transformers' logits vs C "
                   "%.2e, AutoTokenizer ids = C ids" % (os.path.basename(src), e))


def first_diff(a, b, hf):
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return "at token %d: C %r, HF %r" % (k, hf.convert_ids_to_tokens(a[k:k + 3]), hf.convert_ids_to_tokens(b[k:k + 3]))


def byte_decoder():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def write_llmc(model, V, path):
    """llm.c's checkpoint layout (train_gpt2.py's write_model, version 3): our own writer."""
    c = model.config
    Vp = (V + 127) // 128 * 128
    sd = {k: v.detach().float() for k, v in model.state_dict().items()}
    L = c.n_layer
    wte = torch.zeros(Vp, c.n_embd)
    wte[:V] = sd["transformer.wte.weight"]
    parts = [wte, sd["transformer.wpe.weight"]]
    per = [("ln_1.weight", 0), ("ln_1.bias", 0), ("attn.c_attn.weight", 1), ("attn.c_attn.bias", 0),
           ("attn.c_proj.weight", 1), ("attn.c_proj.bias", 0), ("ln_2.weight", 0), ("ln_2.bias", 0),
           ("mlp.c_fc.weight", 1), ("mlp.c_fc.bias", 0), ("mlp.c_proj.weight", 1), ("mlp.c_proj.bias", 0)]
    for name, tr in per:
        parts += [torch.stack([sd["transformer.h.%d.%s" % (l, name)].t() if tr else sd["transformer.h.%d.%s" % (l, name)]
                               for l in range(L)])]
    parts += [sd["transformer.ln_f.weight"], sd["transformer.ln_f.bias"]]
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *([20240326, 3, c.n_positions, V, L, c.n_head, c.n_embd, Vp] + [0] * 248)))
        for p in parts:
            f.write(p.contiguous().numpy().astype("<f4").tobytes())


def c_encode(tok, texts, tmp, ours=True):
    write_texts(os.path.join(tmp, "texts.bin"), texts)
    tool("encode", tok, os.path.join(tmp, "texts.bin"), os.path.join(tmp, "ids.out"), *(["ours"] if ours else []))
    return read_ids(os.path.join(tmp, "ids.out"))


def check_exported(out, src, sample, tmp, name):
    """transformers loads the exported directory; its tokenizer gives our ids, its model the C logits."""
    try:
        model = GPT2LMHeadModel.from_pretrained(out).eval()
        hf = AutoTokenizer.from_pretrained(out)
    except Exception as e:
        report(False, name, "transformers cannot load %s: %s" % (out, e))
        return
    ours = c_encode(src, sample, tmp)
    diff = [t for t, o in zip(sample, ours) if hf(t)["input_ids"] != o]
    ids = ours[0][:60]
    e = rel_err(c_logits(out, ids, tmp), hf_logits(model, ids))
    report(e < 1e-4 and not diff, name, "GPT2LMHeadModel logits vs C %.2e; AutoTokenizer ids equal on %d texts%s" % (
        e, len(sample), "" if not diff else "; differ on %r" % diff[0][:60]))


def bad_inputs(good, tmp, V):
    import shutil
    cases = []

    def variant(name, edit):
        d = os.path.join(tmp, "bad_" + name)
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(good, d)
        edit(d)
        cases.append((name, d))

    st = os.path.join(good, "model.safetensors")
    raw = open(st, "rb").read()
    (hlen,) = struct.unpack_from("<Q", raw)
    header = json.loads(raw[8:8 + hlen])

    def rewrite(d, h):
        hb = json.dumps(h).encode()
        hb += b" " * (-len(hb) % 8)
        open(os.path.join(d, "model.safetensors"), "wb").write(struct.pack("<Q", len(hb)) + hb + raw[8 + hlen:])

    def set_field(d, key, value):
        c = json.load(open(os.path.join(d, "config.json")))
        c[key] = value
        json.dump(c, open(os.path.join(d, "config.json"), "w"))

    name = "transformer.h.0.attn.c_attn.weight"
    shift = dict(header, **{name: dict(header[name], data_offsets=[header[name]["data_offsets"][0] + 4,
                                                                   header[name]["data_offsets"][1] + 4])})
    shape = dict(header, **{name: dict(header[name], shape=header[name]["shape"][::-1])})
    far = dict(header, **{name: dict(header[name], data_offsets=[10 ** 9, 10 ** 9 + 4 * 32 * 96])})
    variant("truncated", lambda d: open(os.path.join(d, "model.safetensors"), "wb").write(raw[:len(raw) // 2]))
    variant("truncated_header", lambda d: open(os.path.join(d, "model.safetensors"), "wb").write(raw[:100]))
    variant("offsets", lambda d: rewrite(d, shift))
    variant("trailing", lambda d: open(os.path.join(d, "model.safetensors"), "wb").write(raw + bytes(4)))
    nan_bits = {"F32": b"\x00\x00\xc0\x7f", "F16": b"\x00\x7e", "BF16": b"\xc0\x7f"}
    def nan_weight(d):  # a NaN as the first number of c_attn's weight
        at = 8 + hlen + header[name]["data_offsets"][0]
        bits = nan_bits[header[name]["dtype"]]
        open(os.path.join(d, "model.safetensors"), "wb").write(raw[:at] + bits + raw[at + len(bits):])
    variant("nan", nan_weight)
    variant("outside", lambda d: rewrite(d, far))
    variant("shape", lambda d: rewrite(d, shape))
    variant("architecture", lambda d: set_field(d, "model_type", "llama"))
    variant("activation", lambda d: set_field(d, "activation_function", "gelu"))
    variant("epsilon_type", lambda d: set_field(d, "layer_norm_epsilon", "x"))
    variant("layers_too_many", lambda d: set_field(d, "n_layer", 10 ** 12))
    variant("model_type_type", lambda d: set_field(d, "model_type", ["gpt2"]))
    def huge(d):  # a config.json of 3.3 TB of parameters over the tiny model's file: refused before allocating
        set_field(d, "n_layer", 256)
        set_field(d, "n_embd", 16384)
    variant("config_beyond_file", huge)
    variant("nul_in_string", lambda d: set_field(d, "model_type", "gpt2\u0000llama"))
    def small_model(d):  # the 100-id model of part 1 with the 2000-id tokenizer
        shutil.rmtree(d)
        shutil.copytree(os.path.join(tmp, "tiny_float32"), d)
        shutil.copy(os.path.join(tmp, "bpe", "tokenizer.json"), d)
    variant("vocab", small_model)
    want = {"truncated": "reach beyond the [0-9]+ data bytes of the file \\(truncated", "offsets": "overlap|span|a gap of 4 bytes",
            "trailing": "4 bytes after the last tensor's data",
            "nan": "qkvw holds nan at element 0: the model cannot be trained or sampled from",
            "truncated_header": "truncated or not safetensors: 100 bytes", "outside": "reach beyond",
            "shape": "has shape \\(96, 32\\), the config needs \\(32, 96\\)", "architecture": "model_type \"llama\" is not supported",
            "activation": "activation_function \"gelu\" is not supported",
            "epsilon_type": "layer_norm_epsilon is not a number", "layers_too_many": "n_layer 1000000000000 is beyond",
            "model_type_type": "model_type \"\\(not a string\\)\" is not supported", "vocab": "tokenizer has %d ids but the model .* only 100" % V,
            "config_beyond_file": "bytes of tensors, but the model of config.json \\(256 layers, 16384 channels.* needs [0-9]+ at least",
            "nul_in_string": "config.json: a string holds a NUL byte"}
    import re
    for name, d in cases:
        r = tool("import", d, check=False)
        msg = (r.stderr + r.stdout).strip()
        report(r.returncode == 1 and re.search(want[name], msg) is not None, "gpt2_bad_input_" + name, msg[:200])


if __name__ == "__main__":
    sys.exit(main())
