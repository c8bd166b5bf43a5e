//! Which proxy a request goes through, decided here rather than inside the HTTP client, so a
//! failure can name the variable that sent it there: `http_proxy`/`HTTP_PROXY` for http URLs,
//! `https_proxy`/`HTTPS_PROXY` for https, then `all_proxy`/`ALL_PROXY`; `no_proxy`/`NO_PROXY`
//! (comma-separated hosts, domain suffixes, `*`) bypasses them, as curl does.

/// The proxy a request will use, and the variable that chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyChoice {
    pub var: String,
    pub value: String,
}

impl ProxyChoice {
    /// How to stop using it for `host`, for error messages.
    pub fn bypass_hint(&self, host: &str) -> String {
        format!(
            "to bypass it for this host set NO_PROXY={host} (or add {host} to NO_PROXY), or unset {}",
            self.var
        )
    }
}

/// The proxy for a request to `scheme://host`, given the environment.
pub fn choose(
    scheme: &str,
    host: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<ProxyChoice> {
    let vars: &[&str] = if scheme == "https" {
        &["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
    } else {
        &["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
    };
    let choice = vars.iter().find_map(|v| {
        env(v)
            .filter(|x| !x.trim().is_empty())
            .map(|value| ProxyChoice {
                var: v.to_string(),
                value: value.trim().to_string(),
            })
    })?;
    let no_proxy = env("no_proxy")
        .or_else(|| env("NO_PROXY"))
        .unwrap_or_default();
    (!bypassed(host, &no_proxy)).then_some(choice)
}

/// Whether `host` matches a NO_PROXY list: `*`, the host itself, or a domain it ends in
/// (`example.com` and `.example.com` both match `a.example.com`). Ports are ignored.
fn bypassed(host: &str, no_proxy: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    no_proxy.split(',').map(str::trim).any(|entry| {
        if entry == "*" {
            return true;
        }
        let entry = entry.trim_start_matches('[');
        let entry = match entry.rsplit_once(':') {
            // host:port, but not a bare IPv6 address.
            Some((h, p)) if !h.contains(':') && p.chars().all(|c| c.is_ascii_digit()) => h,
            _ => entry,
        };
        let entry = entry.trim_end_matches(']').trim_start_matches('.');
        let entry = entry.to_ascii_lowercase();
        !entry.is_empty() && (host == entry || host.ends_with(&format!(".{entry}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let v: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |k| v.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone())
    }

    #[test]
    fn the_scheme_picks_its_variable_and_all_proxy_is_the_fallback() {
        let e = env(&[("HTTP_PROXY", "http://p:1"), ("HTTPS_PROXY", "http://s:2")]);
        assert_eq!(choose("http", "h", &e).unwrap().var, "HTTP_PROXY");
        assert_eq!(choose("https", "h", &e).unwrap().value, "http://s:2");
        let a = env(&[("ALL_PROXY", "socks5://q:3")]);
        assert_eq!(choose("http", "h", &a).unwrap().var, "ALL_PROXY");
        assert_eq!(choose("http", "h", &env(&[])), None);
        assert_eq!(choose("http", "h", &env(&[("HTTP_PROXY", " ")])), None);
    }

    #[test]
    fn no_proxy_bypasses_hosts_domains_and_everything() {
        let with = |np: &str| env(&[("HTTP_PROXY", "http://p:1"), ("NO_PROXY", np)]);
        assert_eq!(
            choose("http", "127.0.0.1", &with("localhost,127.0.0.1")),
            None
        );
        assert_eq!(choose("http", "a.example.com", &with(".example.com")), None);
        assert_eq!(
            choose("http", "a.example.com", &with("example.com:8000")),
            None
        );
        assert_eq!(choose("http", "anything", &with("*")), None);
        assert!(choose("http", "badexample.com", &with("example.com")).is_some());
        assert!(choose("http", "127.0.0.1", &with("")).is_some());
        assert_eq!(choose("http", "[::1]", &with("::1")), None);
    }
}
