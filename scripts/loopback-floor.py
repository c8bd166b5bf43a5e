#!/usr/bin/env python3
# Loopback TCP round trip floor on this VM: a 1-byte echo between two processes, blocking sockets.
import socket, os, time, statistics, sys
n = 5000
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1); port = srv.getsockname()[1]
if os.fork() == 0:
    c, _ = srv.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        b = c.recv(1)
        if not b: os._exit(0)
        c.sendall(b)
s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
t = []
for i in range(n + 200):
    a = time.perf_counter(); s.sendall(b"x"); s.recv(1); d = time.perf_counter() - a
    if i >= 200: t.append(d * 1e6)
t.sort()
print(f"loopback TCP 1-byte echo between two processes: n={n} p50 {t[n//2]:.1f} us p99 {t[int(n*0.99)]:.1f} us; load {open('/proc/loadavg').read().split()[:3]}")
