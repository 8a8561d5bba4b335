# Run: python3 fuzz/spop_seeds.py DIR (then: spop_frame DIR). The four streams
# are also kept in fuzz/regressions/spop_frame/, replayed by cargo test.
"""Seed streams for the spop_frame fuzzer, written from HAProxy's SPOE.txt
(frame layout, varints, typed data): a HELLO, then NOTIFY frames of the
robotgate-check message that examples/edge/spoe-robotgate.conf sends."""
import struct, sys, os

def varint(n):
    if n < 240:
        return bytes([n])
    out = bytearray([(n & 0xff) | 0xf0]); n = (n - 240) >> 4
    while n >= 128:
        out.append((n & 0x7f) | 0x80); n = (n - 128) >> 7
    out.append(n)
    return bytes(out)

def s(b):
    b = b.encode() if isinstance(b, str) else b
    return varint(len(b)) + b

def typed_str(v): return bytes([8]) + s(v)
def typed_bin(v): return bytes([9]) + s(v)
def typed_u32(v): return bytes([3]) + varint(v)
def typed_bool(v): return bytes([1 | (0x10 if v else 0)])
def typed_ipv4(a): return bytes([6]) + bytes(int(x) for x in a.split("."))

def frame(ftype, stream, fid, payload):
    body = bytes([ftype]) + struct.pack(">I", 1) + varint(stream) + varint(fid) + payload
    return struct.pack(">I", len(body)) + body

hello = frame(1, 0, 0, s("supported-versions") + typed_str("2.0") + s("max-frame-size") + typed_u32(16380)
              + s("capabilities") + typed_str("pipelining"))

def hdrs(pairs):
    out = b"".join(s(k) + s(v) for k, v in pairs)
    return out + s(b"") + s(b"")

def notify(stream, fid, method, path, host, ua, ssl=False):
    args = [("src", typed_ipv4("127.0.0.1")), ("method", typed_str(method)), ("path", typed_str(path)),
            ("host", typed_str(host)), ("ssl", typed_bool(ssl)),
            ("headers", typed_bin(hdrs([("host", host), ("user-agent", ua), ("accept", "*/*")])))]
    msg = s("robotgate-check") + bytes([len(args)]) + b"".join(s(k) + v for k, v in args)
    return frame(3, stream, fid, msg)

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36"
gpt = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
seeds = {
    "hello": hello,
    "hello-notify": hello + notify(1, 1, "GET", "/private/x", "shop.example", chrome),
    "hello-two": hello + notify(1, 1, "GET", "/", "shop.example", gpt, True) + notify(2, 1, "HEAD", "/a?b=c", "shop.example:8080", chrome),
    "disconnect": hello + frame(2, 0, 0, s("status-code") + typed_u32(0) + s("message") + typed_str("normal")),
}
for name, data in seeds.items():
    open(os.path.join(out, name), "wb").write(data)
