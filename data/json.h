// data/json.h - a small strict JSON reader: one whole document (RFC 8259) into a flat array
// of nodes. data/gpt2.h reads config.json, tokenizer.json and safetensors headers with it,
// the corpus generator (data/corpus.c) its own spec.json and JSONL lines. Training data has
// its own line-aware reader with detailed messages (data/textdata.h, cuset_jsonl_parse).
//
// Nodes are in document order: a container's children follow it, and node.end is the index
// after its subtree, so the children of node i are i + 1, nodes[i + 1].end, ... while below
// nodes[i].end (cuset_jdoc_get, cuset_jdoc_count walk them). Strings (values and keys) are
// decoded into one text buffer, each NUL-terminated and with its length: escapes become
// UTF-8, other bytes are kept as they are (not checked to be UTF-8).
//
// Header only, libc only; every function is static inline, so a file includes it where it
// needs it.
#ifndef CUSET_JSON_H
#define CUSET_JSON_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { CUSET_JNULL, CUSET_JBOOL, CUSET_JNUM, CUSET_JSTR, CUSET_JARR, CUSET_JOBJ };
typedef struct {
    int type;
    int end;        // the index after this node's subtree
    long key, klen; // a member's key: its offset in text (-1 for array items and the root), length
    long str, slen; // a string: its offset in text and length in bytes
    double num;     // a number; 1 or 0 for true and false
} CusetJNode;
typedef struct {
    CusetJNode *node;
    int nnode, cap;
    char *text;
    size_t tlen, tcap;
    const char *p, *e;     // while parsing: the cursor and the document's end
    const char *why;       // what went wrong, at p
} CusetJDoc;

#define CUSET_JSON_MAX_DEPTH 64

static inline void cuset_jdoc_free(CusetJDoc *d) {
    free(d->node);
    free(d->text);
    memset(d, 0, sizeof *d);
}

// Appends n bytes to the text buffer; -1 when out of memory.
static inline int cuset__jtext(CusetJDoc *d, const char *b, size_t n) {
    if (n == 0) return 0; // text may still be NULL
    if (d->tlen + n > d->tcap) {
        size_t cap = d->tcap ? 2 * d->tcap : 256;
        while (cap < d->tlen + n) cap *= 2;
        char *t = (char *)realloc(d->text, cap);
        if (!t) { d->why = "out of memory"; return -1; }
        d->text = t;
        d->tcap = cap;
    }
    memcpy(d->text + d->tlen, b, n);
    d->tlen += n;
    return 0;
}

static inline void cuset__jws(CusetJDoc *d) {
    while (d->p < d->e && (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r')) d->p++;
}

// Code point cp (at most 0x10FFFF) as UTF-8 into out; its length in bytes.
static inline int cuset_json_utf8(unsigned long cp, char out[4]) {
    static const unsigned char lead[] = { 0, 0, 0xC0, 0xE0, 0xF0 };
    int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (int k = n - 1; k > 0; k--, cp >>= 6) out[k] = (char)(0x80 | (cp & 63));
    out[0] = (char)(lead[n] | cp);
    return n;
}

// The 4 hex digits at p as a number, or -1.
static inline long cuset__jhex4(const CusetJDoc *d, const char *p) {
    long v = 0;
    for (int k = 0; k < 4; k++, p++) {
        int c = p < d->e ? *p : 0;
        int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (x < 0) return -1;
        v = v * 16 + x;
    }
    return v;
}

// The string at the cursor (on its quote), decoded into text; its offset, or -1.
static inline long cuset__jstring(CusetJDoc *d, long *len) {
    size_t start = d->tlen;
    for (d->p++; d->p < d->e && *d->p != '"';) {
        const char *run = d->p; // a run of plain bytes at once
        while (d->p < d->e && *d->p != '"' && *d->p != '\\' && (unsigned char)*d->p >= 0x20) d->p++;
        if (cuset__jtext(d, run, (size_t)(d->p - run))) return -1;
        if (d->p >= d->e || *d->p == '"') break;
        if (*d->p != '\\') { d->why = "control character in a string"; return -1; }
        char esc = d->p + 1 < d->e ? d->p[1] : 0;
        const char *plain = esc ? strchr("\"\\/bfnrt", esc) : NULL;
        if (plain) {
            if (cuset__jtext(d, &"\"\\/\b\f\n\r\t"[plain - "\"\\/bfnrt"], 1)) return -1;
            d->p += 2;
            continue;
        }
        long u = esc == 'u' ? cuset__jhex4(d, d->p + 2) : -1, lo = -1;
        if (u < 0) { d->why = "bad escape in a string"; return -1; }
        d->p += 6;
        if (u >= 0xD800 && u < 0xDC00 && d->e - d->p >= 6 && d->p[0] == '\\' && d->p[1] == 'u')
            lo = cuset__jhex4(d, d->p + 2);
        if (lo >= 0xDC00 && lo < 0xE000) {
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            d->p += 6;
        } else if (u >= 0xD800 && u < 0xE000) {
            d->why = "unpaired surrogate in a string";
            return -1;
        }
        char b[4];
        if (cuset__jtext(d, b, (size_t)cuset_json_utf8((unsigned long)u, b))) return -1;
    }
    if (d->p >= d->e) { d->why = "unterminated string"; return -1; }
    d->p++;
    *len = (long)(d->tlen - start);
    return cuset__jtext(d, "", 1) ? -1 : (long)start;
}

// The number of decimal digits from q on.
static inline size_t cuset__jdigits(const CusetJDoc *d, const char *q) {
    const char *k = q;
    while (k < d->e && *k >= '0' && *k <= '9') k++;
    return (size_t)(k - q);
}

// The number at the cursor, as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?,
// and finite (strtod alone would take nan, inf, hex and a leading '+').
static inline int cuset__jnumber(CusetJDoc *d, double *v) {
    const char *q = d->p + (*d->p == '-');
    size_t n = cuset__jdigits(d, q);
    int ok = n > 0 && !(n > 1 && *q == '0');
    q += n;
    if (ok && q < d->e && *q == '.') {
        ok = (n = cuset__jdigits(d, ++q)) > 0;
        q += n;
    }
    if (ok && q < d->e && (*q == 'e' || *q == 'E')) {
        q += 1 + (q + 1 < d->e && (q[1] == '+' || q[1] == '-'));
        ok = (n = cuset__jdigits(d, q)) > 0;
        q += n;
    }
    if (!ok) { d->why = "bad number"; return -1; }
    size_t len = (size_t)(q - d->p); // strtod needs a NUL-terminated copy: the document need not end with one
    char small[64], *b = len < sizeof small ? small : (char *)malloc(len + 1);
    if (!b) { d->why = "out of memory"; return -1; }
    memcpy(b, d->p, len);
    b[len] = 0;
    *v = strtod(b, NULL);
    if (b != small) free(b);
    if (!isfinite(*v)) { d->why = "number out of range"; return -1; }
    d->p = q;
    return 0;
}

// Appends one node; its index, or -1.
static inline int cuset__jnode(CusetJDoc *d, int type, long key, long klen) {
    if (d->nnode == d->cap) {
        int cap = d->cap ? 2 * d->cap : 64;
        CusetJNode *n = (CusetJNode *)realloc(d->node, (size_t)cap * sizeof *n);
        if (!n) { d->why = "out of memory"; return -1; }
        d->node = n;
        d->cap = cap;
    }
    CusetJNode *n = &d->node[d->nnode];
    memset(n, 0, sizeof *n);
    n->type = type;
    n->key = key;
    n->klen = klen;
    n->end = d->nnode + 1;
    return d->nnode++;
}

// The value at the cursor and its subtree; key, klen: its member key's offset and length, or -1.
static inline int cuset__jvalue(CusetJDoc *d, long key, long klen, int depth) {
    static const char *const words[] = { "null", "true", "false" };
    cuset__jws(d);
    if (d->p >= d->e) { d->why = "unexpected end"; return -1; }
    if (depth > CUSET_JSON_MAX_DEPTH) { d->why = "nested too deeply"; return -1; }
    char c = *d->p, close = c == '{' ? '}' : ']';
    if (c == '"') {
        long len, str = cuset__jstring(d, &len);
        int me = str < 0 ? -1 : cuset__jnode(d, CUSET_JSTR, key, klen);
        if (me < 0) return -1;
        d->node[me].str = str;
        d->node[me].slen = len;
        return 0;
    }
    if (c == '{' || c == '[') { // members (objects: key, ':', value) separated by ','
        int me = cuset__jnode(d, c == '{' ? CUSET_JOBJ : CUSET_JARR, key, klen);
        if (me < 0) return -1;
        d->p++;
        cuset__jws(d);
        if (d->p < d->e && *d->p == close) d->p++;
        else for (;;) {
            long k = -1, kl = -1;
            cuset__jws(d);
            if (c == '{') {
                if (d->p >= d->e || *d->p != '"') { d->why = "expected a member name"; return -1; }
                if ((k = cuset__jstring(d, &kl)) < 0) return -1;
                cuset__jws(d);
                if (d->p >= d->e || *d->p != ':') { d->why = "expected ':'"; return -1; }
                d->p++;
            }
            if (cuset__jvalue(d, k, kl, depth + 1)) return -1;
            cuset__jws(d);
            if (d->p >= d->e) { d->why = "unexpected end"; return -1; }
            if (*d->p == close) { d->p++; break; }
            if (*d->p != ',') { d->why = c == '{' ? "expected ',' or '}'" : "expected ',' or ']'"; return -1; }
            d->p++;
        }
        d->node[me].end = d->nnode;
        return 0;
    }
    for (int w = 0; w < 3; w++) {
        size_t n = strlen(words[w]);
        if ((size_t)(d->e - d->p) >= n && memcmp(d->p, words[w], n) == 0) {
            int me = cuset__jnode(d, w ? CUSET_JBOOL : CUSET_JNULL, key, klen);
            if (me < 0) return -1;
            d->node[me].num = w == 1;
            d->p += n;
            return 0;
        }
    }
    double num;
    if (c != '-' && (c < '0' || c > '9')) { d->why = "unexpected character"; return -1; }
    if (cuset__jnumber(d, &num)) return -1;
    int me = cuset__jnode(d, CUSET_JNUM, key, klen);
    if (me < 0) return -1;
    d->node[me].num = num;
    return 0;
}

// Parses the document s[0..n) into d (node 0 is its root): 0, or -1 with what went wrong
// in *why and its byte offset in *at; d is freed then.
static inline int cuset_jdoc_parse(CusetJDoc *d, const char *s, size_t n, const char **why, size_t *at) {
    memset(d, 0, sizeof *d);
    d->p = s;
    d->e = s + n;
    int rc = cuset__jvalue(d, -1, -1, 0);
    cuset__jws(d);
    if (rc == 0 && d->p != d->e) { d->why = "trailing characters"; rc = -1; }
    if (rc == 0) return 0;
    *why = d->why;
    *at = (size_t)(d->p - s);
    cuset_jdoc_free(d);
    return -1;
}

// The member `key` of object node i if it has the type (-1: any), else -1.
static inline int cuset_jdoc_get(const CusetJDoc *d, int i, const char *key, int type) {
    if (i < 0 || d->node[i].type != CUSET_JOBJ) return -1;
    long n = (long)strlen(key);
    for (int c = i + 1; c < d->node[i].end; c = d->node[c].end)
        if (d->node[c].klen == n && memcmp(d->text + d->node[c].key, key, (size_t)n) == 0)
            return type < 0 || d->node[c].type == type ? c : -1;
    return -1;
}

// The string of node i, or NULL when it is not one (i may be -1).
static inline const char *cuset_jdoc_str(const CusetJDoc *d, int i) {
    return i >= 0 && d->node[i].type == CUSET_JSTR ? d->text + d->node[i].str : NULL;
}

// The number of children of node i.
static inline int cuset_jdoc_count(const CusetJDoc *d, int i) {
    int k = 0;
    for (int c = i + 1; c < d->node[i].end; c = d->node[c].end) k++;
    return k;
}

#endif // CUSET_JSON_H
