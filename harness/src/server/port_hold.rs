//! A killed server's port, kept from every other server until it comes
//! back.
//!
//! A server killed by a story stays dead for the rest of the run, and its
//! clients keep asking at its address, where they must find nothing. But
//! the kernel frees a dead server's port at once, and a server that another
//! run (or test) starts meanwhile may be given it: then the clients of the
//! dead node talk to a stranger that says yes. That happened once: with
//! three of Redlock's five masters killed, a port of one of them went to a
//! server of a test running beside it, and the lock was granted.
//!
//! So the port is *bound* by a socket that never listens: no other bind can
//! take it (nor the kernel hand it out as a free port), and a connection to
//! it is refused, as a connection to a dead server is.
#![allow(unsafe_code)]

/// A port bound on 127.0.0.1 by a socket that never listens; free again
/// when dropped.
#[derive(Debug)]
pub(crate) struct PortHold(libc::c_int);

impl PortHold {
    /// Binds `port`, or `None` if it is taken already (by a server that
    /// took it in the instant since ours died: nothing can be done then).
    pub(crate) fn bind(port: u16) -> Option<Self> {
        // SAFETY: plain socket calls on a descriptor of our own, with a
        // fully initialised `sockaddr_in` whose size we pass.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return None;
            }
            let address = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: port.to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
                },
                sin_zero: [0; 8],
            };
            let bound = libc::bind(
                fd,
                (&raw const address).cast::<libc::sockaddr>(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            );
            if bound != 0 {
                libc::close(fd);
                return None;
            }
            Some(Self(fd))
        }
    }
}

impl Drop for PortHold {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value owns, once.
        unsafe {
            libc::close(self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PortHold;

    #[test]
    fn a_held_port_refuses_connections_and_cannot_be_taken() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let hold = PortHold::bind(port).expect("the port is free");
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_err());
        drop(hold);
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    }
}
