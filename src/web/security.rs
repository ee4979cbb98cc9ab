//! Who may talk to the server, and the headers every response carries.
//!
//! - Host: every request must name this server (`127.0.0.1:PORT` or `localhost:PORT`), so
//!   a page on a hostile domain that re-points its name at 127.0.0.1 (DNS rebinding) is
//!   refused.
//! - Origin: a browser sends one with every POST and every cross-origin request; when
//!   present it must be this server's own.
//! - The per-run secret: printed in the URL; the page's first visit trades it for a cookie
//!   (HttpOnly, SameSite=Strict, one per port) and the page sends it back in a header on
//!   every write. Reads need the cookie or the header; writes need the header (which no
//!   other origin can set without a CORS preflight we never answer) and are POST only.
//! - Content-Security-Policy: scripts, styles, images and connections from this origin
//!   only, no inline script or style, no frames, no plugins; untrusted text can never run.

use axum::http::{HeaderMap, HeaderValue, header};

use tavern::api::{Error, Result};

/// The header the page sends the secret in.
pub const TOKEN_HEADER: &str = "x-tavern-token";

pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

pub struct Guard {
    port: u16,
    secret: String,
}

impl Guard {
    /// A guard for a server on `port`, with a fresh 128-bit secret.
    pub fn new(port: u16) -> Result<Guard> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| {
            Error::io(
                "the system's random source",
                "read",
                std::io::Error::other(e.to_string()),
            )
        })?;
        let secret = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Guard { port, secret })
    }

    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The cookie that carries the secret: one name per port, since cookies are not kept
    /// apart by port and two servers may run side by side.
    pub fn cookie_name(&self) -> String {
        format!("tavern-{}", self.port)
    }

    pub fn set_cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name(),
            self.secret
        )
    }

    /// Is the Host header this server's?
    pub fn host_ok(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        host == format!("127.0.0.1:{}", self.port) || host == format!("localhost:{}", self.port)
    }

    /// Is the Origin header, when there is one, this server's?
    pub fn origin_ok(&self, headers: &HeaderMap) -> bool {
        match headers.get(header::ORIGIN) {
            None => true,
            Some(o) => o.to_str().is_ok_and(|o| {
                o == format!("http://127.0.0.1:{}", self.port)
                    || o == format!("http://localhost:{}", self.port)
            }),
        }
    }

    /// Does the request carry the secret in the header?
    pub fn header_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| same(v, &self.secret))
    }

    /// Does the request carry the secret in its cookie?
    pub fn cookie_ok(&self, headers: &HeaderMap) -> bool {
        let name = self.cookie_name();
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .any(|(k, v)| k == name && same(v, &self.secret))
    }

    /// Does `token` (from the URL) match the secret?
    pub fn token_ok(&self, token: &str) -> bool {
        same(token, &self.secret)
    }
}

/// Compares without stopping at the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The headers every response carries.
pub fn harden(headers: &mut HeaderMap) {
    let set = |h: &mut HeaderMap, k: header::HeaderName, v: &'static str| {
        h.insert(k, HeaderValue::from_static(v));
    };
    set(headers, header::CONTENT_SECURITY_POLICY, CSP);
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(headers, header::X_FRAME_OPTIONS, "DENY");
    set(headers, header::REFERRER_POLICY, "no-referrer");
    set(
        headers,
        header::HeaderName::from_static("cross-origin-opener-policy"),
        "same-origin",
    );
    set(
        headers,
        header::HeaderName::from_static("cross-origin-resource-policy"),
        "same-origin",
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        set(headers, header::CACHE_CONTROL, "no-store");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn host_and_origin_must_be_this_server() {
        let g = Guard::new(4000).unwrap();
        assert!(g.host_ok(&headers(&[("host", "127.0.0.1:4000")])));
        assert!(g.host_ok(&headers(&[("host", "localhost:4000")])));
        assert!(!g.host_ok(&headers(&[("host", "evil.example:4000")])));
        assert!(!g.host_ok(&headers(&[("host", "127.0.0.1:4001")])));
        assert!(!g.host_ok(&headers(&[])));
        assert!(g.origin_ok(&headers(&[])));
        assert!(g.origin_ok(&headers(&[("origin", "http://127.0.0.1:4000")])));
        assert!(!g.origin_ok(&headers(&[("origin", "http://evil.example")])));
        assert!(!g.origin_ok(&headers(&[("origin", "null")])));
    }

    #[test]
    fn the_secret_is_fresh_and_checked_in_header_cookie_and_url() {
        let g = Guard::new(4000).unwrap();
        let other = Guard::new(4000).unwrap();
        assert_ne!(g.secret(), other.secret());
        assert_eq!(g.secret().len(), 32);
        assert!(g.header_ok(&headers(&[(TOKEN_HEADER, g.secret())])));
        assert!(!g.header_ok(&headers(&[(TOKEN_HEADER, other.secret())])));
        let cookie = format!("a=b; tavern-4000={}", g.secret());
        assert!(g.cookie_ok(&headers(&[("cookie", &cookie)])));
        let wrong_port = format!("tavern-4001={}", g.secret());
        assert!(!g.cookie_ok(&headers(&[("cookie", &wrong_port)])));
        assert!(g.token_ok(g.secret()));
        assert!(!g.token_ok(""));
    }
}
