

# One interpreter per bundle (written by `credlint simulate`): this process was started as the
# pod's command line, in the pod's root, and stays here, inside the import of this hook. It
# loads the standard library the program uses once, then forks each run. A run's process makes
# the run's namespaces, mounts and confinement for itself and returns from this import, and the
# interpreter goes on to run /credentials/create.py as a fresh one would. Only credlint's code
# and the standard library run here before a run's confinement is complete.
def _zygote(install_audit, reset_clock):
    import os

    try:
        return _serve(install_audit, reset_clock)
    except BaseException:
        # Never out of this import but in a confined run: the program must not run here.
        os._exit(121)


def _serve(install_audit, reset_clock):
    # <sys/mount.h>, <sched.h> and <linux/prctl.h>, the same on every Linux architecture.
    MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MNT_DETACH = 2, 4, 8, 32, 4096, 2
    CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
    CLONE_NEWUSER, CLONE_NEWPID = 0x10000000, 0x20000000
    PR_SET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 3, 4, 24
    PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
    import ctypes
    import json
    import os
    import resource
    import signal
    import socket
    import stat
    import struct
    import sys

    control = socket.socket(fileno=os.dup(0))
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.close(null)

    def say(text):
        control.sendall((text.replace("\n", " ")[:900] + "\n").encode("utf-8", "replace"))

    line = b""
    while not line.endswith(b"\n"):
        more = control.recv(65536)
        if not more:
            os._exit(0)
        line += more
    config = json.loads(line)
    libc = ctypes.CDLL(None, use_errno=True)
    for name in ("mount", "umount2", "unshare", "setns", "prctl"):
        getattr(libc, name).restype = ctypes.c_int
    libc.syscall.restype = ctypes.c_long
    for name in config["preload"]:
        try:
            __import__(name)
        except Exception:
            pass
    # The program compiled once for every run (its bytes are the same in each run's folder).
    # A program Python cannot compile is left to each run's interpreter, which then reports it
    # as a fresh one would.
    main = sys.argv[0]
    try:
        with open(main, "rb") as f:
            code = compile(f.read(), main, "exec", dont_inherit=True)
    except BaseException:
        code = None
    warm = config.get("warm_tls")
    # The startup hook has loaded ssl wherever the interpreter has it.
    if warm and "ssl" in sys.modules:
        # OpenSSL sets up what a handshake uses (its providers' algorithms, decoders and
        # tables) on a process's first handshake, and keeps it: one handshake with the fake API
        # server here, and no run pays for it again. It sends no request, so the cluster sees
        # nothing; a failure changes nothing but the runs' cost.
        try:
            import ssl

            host, port, ca = warm
            context = ssl.create_default_context(cafile=ca)
            with socket.create_connection((host, port), timeout=5) as raw:
                with context.wrap_socket(raw, server_hostname=host):
                    pass
            del context, raw
        except Exception:
            pass
    import gc

    # What is loaded now is kept out of every run's collections: a run that walked it would
    # write to (and so copy) every page the zygote shares with it.
    gc.freeze()
    say("up")

    def check(rc, what):
        if rc < 0:
            err = ctypes.get_errno()
            raise OSError(err, "%s: %s" % (what, os.strerror(err)))
        return rc

    def mount(source, target, kind, flags, data=None):
        check(
            libc.mount(
                None if source is None else source.encode(),
                target.encode(),
                None if kind is None else kind.encode(),
                ctypes.c_ulong(flags),
                None if data is None else data.encode(),
            ),
            "mount " + target,
        )

    def word(value):
        # Every argument a full register wide: prctl and syscall are variadic.
        return ctypes.c_long(value) if isinstance(value, int) else value

    def prctl(*args):
        # The arguments prctl does not use must be zero.
        args = tuple(args) + (0,) * (5 - len(args))
        return check(libc.prctl(*[word(a) for a in args]), "prctl %d" % args[0])

    def call(name, *args):
        return check(libc.syscall(word(config["syscalls"][name]), *[word(a) for a in args]), name)

    def landlock(rules):
        attr = ctypes.create_string_buffer(struct.pack("=QQQ", *rules["attr"]))
        ruleset = call("landlock_create_ruleset", attr, 24, 0)
        for path, rights in rules["paths"]:
            try:
                target = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            if not stat.S_ISDIR(os.fstat(target).st_mode):
                rights &= rules["file_rights"]
            rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, target))
            call("landlock_add_rule", ruleset, 1, rule, 0)
            os.close(target)
        if rules["attr"][1]:
            for port in rules["ports"]:
                rule = ctypes.create_string_buffer(struct.pack("=QQ", rules["connect"], port))
                call("landlock_add_rule", ruleset, 2, rule, 0)
        call("landlock_restrict_self", ruleset, 0)
        os.close(ruleset)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    def seccomp(program):
        code = bytes.fromhex(program)
        buffer = ctypes.create_string_buffer(code, len(code))
        prog = Fprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        call("seccomp", 1, 0, ctypes.byref(prog))

    def confine(fds):
        # The run's first process: its own /proc, shared memory, termination log and access log.
        out, err = fds
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=64m")
        for name, at in config["logs"]:
            mount(config["staging"] + "/" + name, at, None, MS_BIND)
            mount(None, at, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)
        # The run folder goes from this namespace: the program never sees it.
        check(libc.umount2(config["staging"].encode(), MNT_DETACH), "umount " + config["staging"])
        for fd, to in ((out, 1), (err, 2)):
            os.dup2(fd, to)
        for limit, value in config["rlimits"]:
            resource.setrlimit(limit, (value, value))
        for cap in range(64):
            # EINVAL past the last capability this kernel knows.
            libc.prctl(word(PR_CAPBSET_DROP), word(cap), word(0), word(0), word(0))
        uid, gid = config["user"]
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if config["user_namespace"]:
            check(libc.unshare(CLONE_NEWUSER), "unshare user")
            # Not dumpable since it changed its user, so /proc/self is root's: dumpable while
            # it writes its maps.
            dumpable = libc.prctl(word(PR_GET_DUMPABLE), word(0), word(0), word(0), word(0))
            prctl(PR_SET_DUMPABLE, 1)
            for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1\n" % (uid, uid)), ("gid_map", "%d %d 1\n" % (gid, gid))):
                fd = os.open("/proc/self/" + name, os.O_WRONLY | os.O_CLOEXEC)
                try:
                    if os.write(fd, text.encode()) != len(text):
                        raise OSError("short write to /proc/self/" + name)
                finally:
                    os.close(fd)
            if dumpable >= 0:
                prctl(PR_SET_DUMPABLE, dumpable)
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
        header = ctypes.create_string_buffer(struct.pack("=Ii", 0x20080522, 0))
        data = ctypes.create_string_buffer(24)
        call("capset", header, data)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        if config["landlock"] is not None:
            landlock(config["landlock"])
        for program in config["seccomp"]:
            seccomp(program)

    def start(fds):
        # The run's first process, process 1 of its PID namespace: its own mount, IPC and UTS
        # namespaces, then its confinement. It stays in the zygote's session without leading
        # a group, as a fresh run's program stays in its waiter's (both leaders out of its
        # sight; it may make a session of its own, and the zygote, root, is beyond its
        # signals). Its namespace is inside the zygote's, so it ends with the zygote (process
        # 1 there); when it ends, the kernel kills everything else in its own.
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
        confine(fds)

    # The zygote's own PID namespace, to come back to after each run's: unshare(CLONE_NEWPID)
    # places the next child, and only the next, in a new one.
    own_pid_namespace = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 16, 8)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            say("fail the run's descriptors did not arrive")
            continue
        try:
            check(libc.setns(own_pid_namespace, CLONE_NEWPID), "setns")
            check(libc.unshare(CLONE_NEWPID), "unshare")
        except OSError as e:
            for fd in fds:
                os.close(fd)
            say("fail " + str(e))
            continue
        first = os.fork()
        if first == 0:
            try:
                start(fds)
                say("ready")
            except BaseException as e:
                try:
                    say("fail " + str(e))
                finally:
                    os._exit(125)
            # Confined: the program runs from here, with its container's variables.
            environ = config.get("env")
            if environ is not None:
                os.environ.clear()
                for name, value in environ:
                    os.environ[name] = value
            os.closerange(3, 1 << 20)
            control.detach()
            for name in [n for n in sys.modules if n == "ctypes" or n.startswith("ctypes.") or n == "_ctypes"]:
                del sys.modules[name]
            reset_clock()
            install_audit()
            return code
        for fd in fds:
            os.close(fd)
        _, status = os.waitpid(first, 0)
        say("exit %d" % status)


def _run_main(code):
    # What the interpreter does with `python3 /credentials/create.py` after its startup, done
    # here with the code the zygote compiled: the same `__main__`, `sys.path`, exit status,
    # messages and shutdown (threads, atexit, flushed streams, the program's objects
    # finalized), without compiling the program again or tearing down the interpreter, which
    # would write to (and so copy) every page the run shares with the zygote. The program's
    # frames sit on this one, as they sit on nothing in a fresh interpreter. Once the program
    # has started, this process ends here, whatever happens.
    import atexit
    import gc
    import os
    import signal
    import sys

    path = code.co_filename
    # A `__main__` of the run's own: the zygote's was frozen out of the collector with
    # everything else it had loaded, and the program's objects that refer to its globals would
    # never be collected at the end.
    main = type(sys)("__main__")
    scope = main.__dict__
    scope.update(sys.modules["__main__"].__dict__)
    scope["__file__"] = path
    scope["__cached__"] = None
    scope["__loader__"] = sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", path)
    # The script's folder first on the module path (one symbolic link of the script followed).
    head = path
    try:
        link = os.readlink(path)
        head = link if link.startswith("/") else path.rsplit("/", 1)[0] + "/" + link
    except OSError:
        pass
    cut = head.rfind("/")
    sys.path.insert(0, "" if cut < 0 else head[: max(cut, 1)])
    # Whether the script is a zip or folder to import from (it is not): the interpreter asks
    # the path hooks, and remembers the answer.
    if path not in sys.path_importer_cache:
        sys.path_importer_cache[path] = None
        for hook in sys.path_hooks:
            try:
                sys.path_importer_cache[path] = hook(path)
                break
            except ImportError:
                continue
            except Exception:
                break
    sys.modules["__main__"] = main

    def unraisable(error, what):
        # As the interpreter reports an error it cannot raise: through sys.unraisablehook,
        # with the argument type only a real report makes.
        seen, hook = [], sys.unraisablehook
        sys.unraisablehook = seen.append

        class Probe:
            def __del__(self):
                raise RuntimeError

        Probe()
        sys.unraisablehook = hook
        if seen:
            hook(type(seen[0])((type(error), error, None, None, what)))

    status = 1
    try:
        interrupted = False
        try:
            exec(code, scope)
            status = 0
        except SystemExit as stop:
            # Its code: None for 0, an integer as the C `int` it becomes, anything else
            # printed and 1.
            value = stop.code
            if value is None:
                status = 0
            elif isinstance(value, int):
                status = value if -(1 << 63) <= value < 1 << 63 else -1
            elif sys.stderr is not None:
                sys.stderr.write(str(value))
                sys.stderr.write("\n")
            del value
        except BaseException as error:
            interrupted = isinstance(error, KeyboardInterrupt)
            kind, trace = type(error), error.__traceback__.tb_next
            error.__traceback__ = trace
            sys.last_type, sys.last_value, sys.last_traceback = kind, error, trace
            try:
                sys.excepthook(kind, error, trace)
            except BaseException as failed:
                import traceback

                print("Error in sys.excepthook:", file=sys.stderr)
                traceback.print_exception(failed, file=sys.stderr)
                print("\nOriginal exception was:", file=sys.stderr)
                traceback.print_exception(error, file=sys.stderr)
            # Nothing here keeps the program's frames, and so its objects, from the teardown.
            del error, kind, trace
        for name in ("__file__", "__cached__"):
            scope.pop(name, None)
        # The interpreter's shutdown, in its order: threads, atexit, the streams flushed.
        threading = sys.modules.get("threading")
        if threading is not None:
            try:
                threading._shutdown()
            except BaseException as failed:
                unraisable(failed, threading)
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None and not stream.closed:
                    stream.flush()
            except BaseException as failed:
                if stream is sys.stdout:
                    unraisable(failed, stream)
                status = 120
        # Then the program's objects as the teardown takes them: `sys` reset, `__main__`
        # dropped and the collector run, so their finalizers run (and the files they left open
        # are flushed) while the names they use still hold. What other modules keep is left,
        # as the interpreter's last steps would leave it unreported.
        sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__
        for name in ("path", "argv", "ps1", "ps2", "last_type", "last_value", "last_traceback",
                     "path_hooks", "path_importer_cache", "meta_path", "__interactivehook__"):
            if hasattr(sys, name):
                setattr(sys, name, None)
        sys.modules["__main__"] = None
        del main, scope, code
        gc.collect()
        for stream in (sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except BaseException:
                pass
        if interrupted:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
            status = 128 + signal.SIGINT
    finally:
        os._exit(status & 0xFF)


_main_code = _zygote(lambda: _install_audit(_os, _sys, __RUN__, __PORTS__, __LOG__), _clock_reset)
del _zygote, _serve, _install_audit, _clock_reset
if _os.getuid() == 0:
    # Only a run's first process, the pod's user, gets here: never run the program as root.
    _os._exit(121)
if _main_code is not None:
    # Out of the hook's module first: the program finds in it what a fresh run's would hold.
    globals().pop("_run_main")(globals().pop("_main_code"))
del _run_main, _main_code
