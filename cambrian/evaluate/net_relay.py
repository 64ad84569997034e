"""The allowed destinations of an evaluation in its own network namespace (stdlib only).

Loaded by `limits_exec.py` by path, like `linux_ns.py`: no package imports, cheap to import.

An isolated evaluation has only its own loopback device: no route leads anywhere, so neither
Cambrian's loopback services (the LLM server, the web UI, the live feed) nor any other host is
reachable. For each destination of `evaluation.network_allow` (resolved by Cambrian to an
address and port, `network.py`) the shim

1. forks a forwarder *before* it unshares its network namespace, so the forwarder stays in
   Cambrian's network (and outside the evaluation's PID namespace: the command cannot see or
   signal it);
2. inside the new namespace, opens one listening socket at the destination's own address and
   port (a loopback address is there already; any other address is added to `lo` as a /32 or
   /128) and hands it to the forwarder over a socket pair (SCM_RIGHTS);
3. for a destination named by host name, covers `/etc/hosts` (read-only) with a copy that maps
   the name to that address first, so the name resolves inside without DNS.

The forwarder accepts on those sockets and connects each connection to its destination only,
then copies bytes both ways (TLS passes through untouched). Any other address or port of the
namespace has nothing listening (connection refused) or no route at all.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import signal
import socket
import struct

SIOCSIFADDR = 0x8916
SIOCSIFNETMASK = 0x891C
IFREQ_ADDRESS = "16sHH4s8x"  # struct ifreq holding a struct sockaddr_in
IN6_IFREQ = "16sIi"  # struct in6_ifreq: address, prefix length, interface index
MAX_CONNECTIONS = 64  # at once, per evaluation; more are closed at once
CONNECT_TIMEOUT_S = 10.0
BUFFER_BYTES = 65536
HOSTS = "/etc/hosts"
MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000


def _is_loopback(address: str) -> bool:
    return ipaddress.ip_address(address).is_loopback


def add_local_address(address: str, alias: int) -> None:
    """Makes `address` local to this namespace's `lo` (raises OSError)."""
    if ":" in address:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
            request = struct.pack(IN6_IFREQ, socket.inet_pton(socket.AF_INET6, address), 128,
                                  socket.if_nametoindex("lo"))
            fcntl.ioctl(sock, SIOCSIFADDR, request)
        return
    name = f"lo:{alias}".encode()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for request, value in ((SIOCSIFADDR, address), (SIOCSIFNETMASK, "255.255.255.255")):
            fcntl.ioctl(sock, request, struct.pack(IFREQ_ADDRESS, name, socket.AF_INET, 0,
                                                   socket.inet_aton(value)))


class Relay:
    """The forwarder of one evaluation's allowed destinations: dicts of name, ip, port."""

    def __init__(self, destinations: list[dict]) -> None:
        self.destinations = destinations
        self.pid: int | None = None
        self.control: socket.socket | None = None

    def start(self, prepare) -> None:  # type: ignore[no-untyped-def]
        """Forks the forwarder (call before unsharing the network namespace); `prepare()` runs
        first in the forwarder (the shim's parent-death signal)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:  # the forwarder: never returns
            code = 0
            try:
                ours.close()
                prepare()
                _detach(theirs.fileno())
                _forward(theirs, self.destinations)
            except BaseException:  # noqa: BLE001 - nothing to report to; the connections fail
                code = 1
            os._exit(code)
        theirs.close()
        self.pid, self.control = pid, ours

    def open_inside(self) -> list[str]:
        """In the new namespace (loopback up): one listener per destination, handed to the
        forwarder; returns what failed."""
        assert self.control is not None
        problems = []
        local: list[str] = []  # addresses added to `lo`
        opened: set[tuple[str, int]] = set()
        for index, destination in enumerate(self.destinations):
            address, port = destination["ip"], int(destination["port"])
            if (address, port) in opened:
                continue  # another name of the same address
            opened.add((address, port))
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            try:
                if not _is_loopback(address) and address not in local:
                    local.append(address)
                    with contextlib.suppress(FileExistsError):
                        add_local_address(address, len(local))
                with socket.socket(family, socket.SOCK_STREAM) as listener:
                    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    listener.bind((address, port))
                    listener.listen(MAX_CONNECTIONS)
                    socket.send_fds(self.control, [str(index).encode()], [listener.fileno()])
            except OSError as error:
                problems.append(f"allowed destination {destination['name']}:{port} "
                                f"({address}) unreachable: {error}")
        return problems

    def cover_hosts(self, scratch: str, mount) -> list[str]:  # type: ignore[no-untyped-def]
        """In the new mount namespace (`mount`: `linux_ns.mount`): /etc/hosts maps each allowed
        host name to the address it is reachable at. The copy is written into `scratch`,
        mounted read-only, and unlinked before the command starts. Returns what failed."""
        lines = sorted({f"{d['ip']} {d['name']}" for d in self.destinations
                        if not _is_ip(d["name"])})
        if not lines or not os.path.isfile(HOSTS):
            return []
        try:
            with open(HOSTS, "rb") as original:
                text = "\n".join(lines).encode() + b"\n" + original.read()
        except OSError as error:
            return [f"allowed host names do not resolve inside: {error}"]
        path = os.path.join(scratch, f".cambrian-hosts-{os.getpid()}")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, text)
                os.fchmod(fd, 0o644)
                mount(f"/proc/self/fd/{fd}", HOSTS, None, MS_BIND)
                mount(None, HOSTS, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
            finally:
                os.close(fd)
                os.unlink(path)
        except OSError as error:
            return [f"allowed host names do not resolve inside: {error}"]
        return []

    def stop(self) -> None:
        """Ends the forwarder (the sandbox's end would too: parent-death signal)."""
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(self.pid, 0)
            self.pid = None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _detach(keep: int) -> None:
    """No descriptor of the shim but `keep`: not its report pipe, not the command's output
    pipes (which Cambrian reads to their end)."""
    for number in (signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))


def _forward(control: socket.socket, destinations: list[dict]) -> None:
    """The forwarder's loop: takes listeners until the shim closes the pair, then exits."""
    import threading

    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def pump(source: socket.socket, target: socket.socket, ended: list[int],
             lock: threading.Lock) -> None:
        try:
            while data := source.recv(BUFFER_BYTES):
                target.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)
        with lock:
            ended.append(1)
            last = len(ended) == 2
        if last:  # both directions are done
            source.close()
            target.close()
            slots.release()

    def bridge(inside: socket.socket, destination: dict) -> None:
        try:
            outside = socket.create_connection((destination["ip"], int(destination["port"])),
                                               timeout=CONNECT_TIMEOUT_S)
        except OSError:
            inside.close()
            slots.release()
            return
        outside.settimeout(None)
        ended: list[int] = []
        lock = threading.Lock()
        threading.Thread(target=pump, args=(outside, inside, ended, lock), daemon=True).start()
        pump(inside, outside, ended, lock)

    def accept(listener: socket.socket, destination: dict) -> None:
        while True:
            try:
                inside, _ = listener.accept()
            except OSError:
                return
            if not slots.acquire(blocking=False):
                inside.close()
                continue
            threading.Thread(target=bridge, args=(inside, destination), daemon=True).start()

    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 64, 1)
        except OSError:
            return
        if not message:
            return  # the shim closed its end (or exited): the evaluation is over
        for fd in fds:
            listener = socket.socket(fileno=fd)
            destination = destinations[int(message)]
            threading.Thread(target=accept, args=(listener, destination), daemon=True).start()
