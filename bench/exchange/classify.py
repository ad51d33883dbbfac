#!/usr/bin/env python3
"""What a profiled phase spent its time on, by part of the gateway.

Usage: bench/exchange/classify.py PERF_DATA [CATEGORY]
  PERF_DATA  a profile kept by `PROFILE_PHASE=refresh PROFILE_KEEP=FILE bench/exchange/run.sh`
  CATEGORY   also list the frames that made up one category (e.g. "NIO pipeline")

Each sample goes to the first category that matches one of its frames, from the leaf up. Runtime
frames (retain and release, malloc and free, memcpy) are skipped, so that their cost counts for
the code that called them. BoringSSL's assembly keeps no frame pointer, so its samples carry the
leaf frame alone: the signature is found by its symbols' names.
"""
import collections
import re
import subprocess
import sys

RUNTIME = re.compile(
    r'^(swift_retain|swift_release|swift_bridgeObject|swift_allocObject|swift_deallocObject|_swift_release_dealloc|'
    r'swift::RefCounts|swift_isUniquely|swift_beginAccess|swift_endAccess|malloc|free|je_|__memmove|__memcpy|__memset|'
    r'__memcmp|_int_|swift_slowAlloc|swift_slowDealloc|\$ss23_ContiguousArrayStorage|swift::runtime::AccessSet|getCache|'
    r'tryCast|swift_dynamicCast|__tls_get_addr|swift_getGenericMetadata|swift_arrayDestroy)')

# In order: the first that matches a frame wins (a frame's mangled name also spells the types it
# takes, so the specific parts come before the general ones).
CATEGORIES = [(name, re.compile(pattern)) for name, pattern in [
    ('signature (ECDSA P-256)', r'nistz256|ecdsa|ECDSA|P256O7Signing|BoringSSLECPrivateKey|bn_|BN_|ec_scalar|ec_GFp|ECDSALowS'),
    ('hashes (SHA-2)', r'sha256|sha512|SHA256|SHA512'),
    ('socket writes (kernel)', r'writev|sendmsg|sock_write|tcp_sendmsg'),
    ('socket reads (kernel)', r'readv|recvmsg|sock_read|tcp_recvmsg|ksys_read|__GI___libc_read'),
    ('epoll (kernel)', r'epoll'),
    ('request parsing (llhttp, head)', r'llhttp|HTTPDecoder|BetterHTTPParser|ApplicationPipeline.*convert|RequestHeadFacts|ProxyDecision|RequestTarget'),
    ('answer head encoding', r'HTTPResponseEncoder|HTTPEncoder|HTTPResponseHead|HTTPDate'),
    ('stored records (decode, cache)', r'StoredRecordCoding|StoredRecordCache|account4from|identities4from|AccountSnapshot'),
    ('Redis client', r'RedisBridge|hiredis|redisReader'),
    ('access token (claims, JWS, base64url)', r'AccessTokenIssuer|AccessTokenClaims|compactJWS|Base64URL|ClaimsMetadata|VerifiedTokenCache'),
    ('JSON (bodies, answers)', r'JSONValue|JSONBody|GoTrueJSON|UserTextCache'),
    ('refresh token', r'RefreshToken|UUIDBytes|getrandom'),
    ('request log, metrics, spans, clocks', r'RequestLogMiddleware|Logging|Logger|Metrics|Counter|Recorder|Prometheus|GatewaySpans|Tracing|ContinuousClock|clock_gettime|Duration'),
    ('Hummingbird (router, middleware, request)', r'Hummingbird|Router|Middleware|Controller|FlatDictionary'),
    ('connection handler', r'GatewayConnectionHandler|ClientConnection'),
    ('Swift concurrency (jobs, continuations)', r'swift_job|swift_task|swift_continuation|Concurrency|StackAllocator|runJob|withStatusRecord|EventLoopTaskExecutor|EventLoopFuture|Continuation'),
    ('NIO pipeline', r'NIOCore|NIOPosix|ChannelHandler|ChannelPipeline|ByteBuffer'),
    ('AuthGate, other', r'AuthGate'),
]]


def samples(data):
    text = subprocess.run(['perf', 'script', '-i', data, '-F', 'ip,sym,dso'], capture_output=True, text=True, check=True).stdout
    for block in text.split('\n\n'):
        # "ADDRESS SYMBOL (DSO)": the kernel's frames are marked as such.
        frames = []
        for line in block.strip().split('\n'):
            match = re.match(r'^\s*[0-9a-f]+ (.*) \(([^()]*)\)$', line)
            if match:
                symbol, dso = match.groups()
                frames.append(('kernel: ' if dso == '[kernel.kallsyms]' else '') + symbol)
        if frames:
            yield frames


KERNEL = re.compile(r'^kernel: ')
KERNEL_PARTS = [entry for entry in CATEGORIES if entry[0].endswith('(kernel)')]


def classify(frames):
    # A sample in the kernel goes to the system call it serves (its frames list the kernel's
    # functions first, then the caller's).
    if KERNEL.search(frames[0]):
        for frame in frames:
            for name, pattern in KERNEL_PARTS:
                if pattern.search(frame):
                    return name, frame
        return 'kernel, other', frames[0]
    for frame in frames:
        if RUNTIME.search(frame):
            continue
        for name, pattern in CATEGORIES:
            if pattern.search(frame):
                return name, frame
    return 'other: ' + frames[0][:60], frames[0]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    counts, detail, total = collections.Counter(), collections.Counter(), 0
    for frames in samples(sys.argv[1]):
        total += 1
        name, owner = classify(frames)
        counts[name] += 1
        if len(sys.argv) > 2 and name == sys.argv[2]:
            detail[owner[:120]] += 1
    if not total:
        sys.exit('no samples in ' + sys.argv[1])
    for name, count in counts.most_common(25):
        print(f'{100 * count / total:5.1f}%  {name}')
    print(f'{total} samples')
    for owner, count in detail.most_common(30):
        print(f'{100 * count / total:5.2f}%  {owner}')


if __name__ == '__main__':
    main()
