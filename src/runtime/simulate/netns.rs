//! The program's network namespace: made by credlint (as root), which binds the fake API
//! server's and the fake pods' ports inside it, so the program, which enters it before `exec`,
//! finds them on its own loopback and nothing else: no port of the host, no route out, no
//! resolver (a namespace's sockets belong to it whichever thread later uses them).
//!
//! Only the calling thread changes namespace with `unshare(CLONE_NEWNET)` or `setns`, so each
//! step runs on a short-lived thread of its own and credlint's other threads stay where they
//! are.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// A network namespace with its loopback up, held open by a descriptor to it.
#[derive(Clone)]
pub struct NetNs(Arc<OwnedFd>);

impl NetNs {
    /// A new network namespace (credlint must be root: it needs `CAP_SYS_ADMIN` to make one
    /// and `CAP_NET_ADMIN` in it to bring its loopback up).
    pub fn create() -> Result<NetNs, String> {
        let made = on_own_thread(|| {
            // SAFETY: only the network namespace is unshared, never the descriptor table, so
            // every descriptor stays valid on every thread.
            unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }?;
            loopback_up()?;
            add_address(b"lo:1\0", API_ADDRESS)?;
            let fd = rustix::fs::open(
                "/proc/thread-self/ns/net",
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?;
            Ok(fd)
        })
        .map_err(|e| format!("refused by the kernel or the container: {e}"))?;
        Ok(NetNs(Arc::new(made)))
    }

    /// A listening TCP socket on the namespace's loopback, on a port the kernel picks.
    pub fn bind_loopback(&self) -> io::Result<TcpListener> {
        self.bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
    }

    /// A listening TCP socket in the namespace at `at`.
    pub fn bind(&self, at: SocketAddrV4) -> io::Result<TcpListener> {
        let ns = Arc::clone(&self.0);
        on_own_thread(move || {
            rustix::thread::move_into_link_name_space(
                ns.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )?;
            TcpListener::bind(at)
        })
    }

    /// The descriptor the program's child enters with `setns` between `fork` and `exec`.
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Runs `work` on a thread of its own, which ends with it (and with whatever namespace it
/// entered).
fn on_own_thread<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    std::thread::Builder::new()
        .name("credlint-netns".into())
        .spawn(work)?
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the namespace's thread panicked")))
}

/// The address of the `kubernetes` Service as a pod sees it (the first address of the usual
/// service range), where the fake API server listens at port 443 in the namespace.
pub const API_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);

/// Gives the loopback a second address, `address`/32, through the alias `name`
/// (NUL-terminated): a packet to it stays in the namespace, as one to 127.0.0.1 does.
fn add_address(name: &[u8], address: Ipv4Addr) -> io::Result<()> {
    let (socket, mut request) = interface_request(name)?;
    // SAFETY: `sockaddr_in` is plain data, zeroed is a valid value of it.
    let mut sin: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sin.sin_family = libc::AF_INET as libc::sa_family_t;
    sin.sin_addr.s_addr = u32::from(address).to_be();
    let mut mask = sin;
    mask.sin_addr.s_addr = u32::MAX;
    for (call, value) in [(libc::SIOCSIFADDR, sin), (libc::SIOCSIFNETMASK, mask)] {
        // SAFETY: a `sockaddr_in` fits in the `sockaddr` of the union (the address and the
        // netmask are the same member's storage), which each call reads; the socket and
        // `request` live for the call.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&value as *const libc::sockaddr_in).cast::<u8>(),
                (&mut request.ifr_ifru.ifru_addr as *mut libc::sockaddr).cast::<u8>(),
                std::mem::size_of::<libc::sockaddr_in>(),
            );
            if libc::ioctl(socket.as_raw_fd(), call, &request) < 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// A socket to ask the kernel about interfaces with, and a request naming the interface
/// `name` (NUL-terminated).
fn interface_request(name: &[u8]) -> io::Result<(OwnedFd, libc::ifreq)> {
    let socket = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    )?;
    // SAFETY: `ifreq` is plain data, zeroed is a valid value of it.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(name) {
        *slot = *byte as libc::c_char;
    }
    Ok((socket, request))
}

/// Sets the `lo` interface up (a new namespace's loopback starts down).
fn loopback_up() -> io::Result<()> {
    let (socket, mut request) = interface_request(b"lo\0")?;
    // SAFETY: the socket is open for the call, and `request` is an `ifreq` that lives for it,
    // as SIOCGIFFLAGS and SIOCSIFFLAGS expect.
    unsafe {
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) < 0 {
            return Err(io::Error::last_os_error());
        }
        request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream;

    #[test]
    fn a_port_bound_in_the_namespace_is_not_on_the_hosts_loopback() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("SKIPPED: a network namespace needs root");
            return;
        }
        let ns = match NetNs::create() {
            Ok(ns) => ns,
            Err(why) => {
                eprintln!("SKIPPED: {why}");
                return;
            }
        };
        let listener = ns.bind_loopback().unwrap();
        let port = listener.local_addr().unwrap().port();
        // From the host's namespace the port is not there (or is someone else's: then it
        // accepts, but not on this listener).
        listener.set_nonblocking(true).unwrap();
        let _ = TcpStream::connect(("127.0.0.1", port));
        assert!(
            listener.accept().is_err(),
            "a host connection reached the namespace"
        );
        // From inside the namespace it is.
        let inside = ns.clone();
        let reached = on_own_thread(move || {
            rustix::thread::move_into_link_name_space(
                inside.0.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )?;
            TcpStream::connect(("127.0.0.1", port)).map(|_| ())
        });
        assert!(reached.is_ok(), "{reached:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(listener.accept().is_ok());
    }
}
