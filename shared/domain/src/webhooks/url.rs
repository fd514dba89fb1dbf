//! Where webhooks may go. A team's endpoint URL is parsed by a real URL parser (so
//! `http://127.0.0.1:1@10.0.0.5/` is seen as userinfo plus host 10.0.0.5) and refused when it
//! could reach the deployment's own network: private, loopback, link-local (the instance
//! metadata service at 169.254.169.254) and other non-public addresses. Host names are checked
//! again at delivery time on the addresses they resolve to (a name may resolve elsewhere by
//! then), by the sender, with [`ip_allowed`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use thiserror::Error;

/// The longest URL accepted.
pub const MAX_LEN: usize = 2048;

/// Which destinations a deployment may send webhooks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UrlPolicy {
    /// Only https to public addresses (every deployed function).
    #[default]
    Production,
    /// Also http or https to loopback (the local stack, whose receivers run on the same laptop).
    LocalStack,
}

/// Why a URL is refused. The message is shown to the team (and kept in an attempt record), so it
/// names the rule, never what a connection to the address did.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UrlRefused {
    #[error("url is not a valid absolute URL")]
    Malformed,
    #[error("url must not carry a user name or password")]
    Userinfo,
    #[error("url must be https:// (http:// only to 127.0.0.1 or localhost on the local stack)")]
    Scheme,
    #[error("url must point to a public address")]
    NotPublic,
}

/// A parsed URL that passed the policy: its host still has to resolve to allowed addresses.
pub fn check(raw: &str, policy: UrlPolicy) -> Result<url::Url, UrlRefused> {
    if raw.len() > MAX_LEN || raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlRefused::Malformed);
    }
    let url = url::Url::parse(raw).map_err(|_| UrlRefused::Malformed)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlRefused::Userinfo);
    }
    let host = url.host().ok_or(UrlRefused::Malformed)?;
    let loopback = match &host {
        url::Host::Domain(name) => is_loopback_name(name),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    let local_loopback = policy == UrlPolicy::LocalStack && loopback;
    match url.scheme() {
        "https" => {}
        "http" if local_loopback => {}
        _ => return Err(UrlRefused::Scheme),
    }
    if local_loopback {
        return Ok(url);
    }
    let public = match host {
        url::Host::Domain(name) => !is_internal_name(name),
        url::Host::Ipv4(ip) => ipv4_public(ip),
        url::Host::Ipv6(ip) => ipv6_public(ip),
    };
    if public { Ok(url) } else { Err(UrlRefused::NotPublic) }
}

/// Whether a delivery may connect to `ip` (what a host name resolved to, at delivery time).
pub fn ip_allowed(ip: IpAddr, policy: UrlPolicy) -> bool {
    match ip {
        IpAddr::V4(v4) => ipv4_public(v4) || (policy == UrlPolicy::LocalStack && v4.is_loopback()),
        IpAddr::V6(v6) => ipv6_public(v6) || (policy == UrlPolicy::LocalStack && v6.is_loopback()),
    }
}

fn is_loopback_name(name: &str) -> bool {
    let name = name.trim_end_matches('.');
    name.eq_ignore_ascii_case("localhost") || name.to_ascii_lowercase().ends_with(".localhost")
}

/// Names that only mean something inside a network (cloud metadata services, mDNS, loopback):
/// refused up front so the team gets a 422 rather than failed deliveries.
fn is_internal_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    is_loopback_name(&name)
        || !name.contains('.')
        || [".internal", ".local", ".localdomain", ".home.arpa", ".in-addr.arpa", ".ip6.arpa"]
            .iter()
            .any(|suffix| name.ends_with(suffix))
}

fn ipv4_public(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || a >= 240
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier-grade NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19))) // benchmarking
}

fn ipv6_public(ip: Ipv6Addr) -> bool {
    // An IPv4 address wrapped in IPv6 (mapped, or NAT64) reaches that IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return ipv4_public(v4);
    }
    let s = ip.segments();
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return ipv4_public(Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local, fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local, fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated), fec0::/10
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only
        || s[..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible (deprecated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use UrlPolicy::{LocalStack, Production};

    #[test]
    fn https_to_public_hosts_passes() {
        for url in ["https://example.com/hooks", "https://93.184.215.14/h", "https://[2606:2800:21f::1]/h"] {
            assert!(check(url, Production).is_ok(), "{url}");
        }
    }

    #[test]
    fn internal_destinations_are_refused_in_production() {
        for url in [
            "https://169.254.169.254/latest/meta-data",
            "https://10.0.0.5/x",
            "https://172.16.0.1/x",
            "https://192.168.1.1/x",
            "https://100.64.0.1/x",
            "https://0.0.0.0/x",
            "https://[::1]/x",
            "https://[fc00::1]/x",
            "https://[fd12::1]/x",
            "https://[fe80::1]/x",
            "https://[::ffff:10.0.0.5]/x",
            "https://[64:ff9b::a00:5]/x",
            "https://metadata.google.internal/x",
            "https://localhost/x",
            "https://app.localhost/x",
            "https://printer.local/x",
            "https://metadata/x",
            "https://0x7f.1/x",
            "https://2130706433/x",
        ] {
            assert_eq!(check(url, Production), Err(UrlRefused::NotPublic), "{url}");
        }
    }

    #[test]
    fn plain_http_is_loopback_on_the_local_stack_only() {
        assert_eq!(check("http://example.com/h", Production), Err(UrlRefused::Scheme));
        assert_eq!(check("http://127.0.0.1:9000/h", Production), Err(UrlRefused::Scheme));
        assert_eq!(check("http://localhost:9001/2018-06-01/runtime", Production), Err(UrlRefused::Scheme));
        assert!(check("http://127.0.0.1:9000/h", LocalStack).is_ok());
        assert!(check("http://localhost:9000/h", LocalStack).is_ok());
        assert_eq!(check("http://example.com/h", LocalStack), Err(UrlRefused::Scheme));
        assert_eq!(check("http://10.0.0.5/h", LocalStack), Err(UrlRefused::Scheme));
        assert_eq!(check("https://10.0.0.5/h", LocalStack), Err(UrlRefused::NotPublic));
    }

    #[test]
    fn userinfo_is_refused_so_the_host_cannot_be_disguised() {
        for policy in [Production, LocalStack] {
            assert_eq!(check("http://127.0.0.1:1@10.0.0.5:8080/x", policy), Err(UrlRefused::Userinfo));
            assert_eq!(check("https://user@example.com/x", policy), Err(UrlRefused::Userinfo));
        }
    }

    #[test]
    fn malformed_urls_are_refused() {
        for url in ["nope", "https://", "ftp://x", "https://exa mple.com", "/relative"] {
            assert!(check(url, Production).is_err(), "{url}");
        }
        assert_eq!(
            check(&format!("https://e.com/{}", "a".repeat(MAX_LEN)), Production),
            Err(UrlRefused::Malformed)
        );
    }

    #[test]
    fn resolved_addresses() {
        let public: IpAddr = "93.184.215.14".parse().unwrap();
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let metadata: IpAddr = "169.254.169.254".parse().unwrap();
        assert!(ip_allowed(public, Production));
        assert!(!ip_allowed(loopback, Production));
        assert!(ip_allowed(loopback, LocalStack));
        assert!(!ip_allowed(metadata, LocalStack));
        assert!(!ip_allowed("::ffff:127.0.0.1".parse().unwrap(), Production));
    }
}
