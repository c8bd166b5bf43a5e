//! The client's diagnoses, each against a real server on 127.0.0.1 or a local stand-in that
//! misbehaves on purpose: what the message must name for a user to fix the cause.
mod common;

use clawrl_endpoint::{Client, ErrorKind, RemotePolicy, Role};
use clawrl_policy::ActionSource;
use common::*;

fn client(base_url: &str, key: &str, timeout: f64) -> Client {
    Client::new(config(base_url, key, timeout), &no_env).unwrap()
}

#[test]
fn a_remote_policy_answers_like_the_local_one() {
    let s = server();
    let base = format!("http://{}/v1", s.addr);
    let remote = RemotePolicy::connect(config(&base, KEY, 5.0), Role::Student, &no_env).unwrap();
    let local = policy("gaussian_mlp", 4, 1, 2);
    let obs: Vec<f32> = (0..40).map(|i| (i as f32 * 0.37).cos()).collect();
    assert_eq!(
        remote.gaussians(&obs).unwrap(),
        local.gaussians(&obs).unwrap()
    );
    assert_eq!(remote.actions(&obs).unwrap(), local.actions(&obs).unwrap());
    assert_eq!(remote.policy_config(), local.config());
    assert!(remote.label().contains("`student`") && remote.label().contains(&base));
}

#[test]
fn a_model_the_server_lacks_is_named_with_the_ids_it_offers() {
    let s = server();
    let mut cfg = common::endpoint_toml(&format!("http://{}/v1", s.addr), KEY, 5.0);
    cfg = cfg.replace("student_model = \"student\"", "student_model = \"studnet\"");
    let ep =
        clawrl_endpoint::EndpointConfig::from_str(&cfg, std::path::Path::new("ep.toml"), &no_env)
            .unwrap();
    let e = RemotePolicy::connect(ep, Role::Student, &no_env)
        .err()
        .unwrap();
    assert_eq!(e.kind, ErrorKind::NotFound);
    for part in [
        "`studnet`",
        "endpoint.student_model",
        "ep.toml",
        "`teacher`, `student`, `sac`",
    ] {
        assert!(e.message.contains(part), "{part}: {}", e.message);
    }
    // The server's own 404 on act says the same.
    let c = client(&format!("http://{}/v1", s.addr), KEY, 5.0);
    let e = c.act("critic", &[0.0; 6], 6, true).unwrap_err();
    assert!(
        e.message.contains("`critic`") && e.message.contains("`sac`"),
        "{}",
        e.message
    );
}

#[test]
fn a_wrong_key_names_where_the_key_came_from() {
    let s = server();
    let e = client(&format!("http://{}/v1", s.addr), "not-the-key", 5.0)
        .models()
        .unwrap_err();
    assert_eq!((e.kind, e.status), (ErrorKind::Unauthorized, Some(401)));
    assert!(
        e.message
            .contains("endpoint.api_key in configs/endpoint.toml"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("not the one this server was started with"),
        "{}",
        e.message
    );
    assert!(
        !e.message.contains("not-the-key"),
        "the message shows the key"
    );
}

#[test]
fn a_doubled_v1_or_a_closed_port_names_the_url_actually_requested() {
    let s = server();
    let e = client(&format!("http://{}/v1/v1", s.addr), KEY, 5.0)
        .models()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);
    let url = format!("http://{}/v1/v1/models", s.addr);
    assert!(
        e.message.contains(&url) && e.message.contains("ending in /v1 once"),
        "{}",
        e.message
    );
    let port = closed_port();
    let e = client(&format!("http://{port}/v1"), KEY, 5.0)
        .models()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Connect);
    assert!(
        e.message.contains(&format!("http://{port}/v1/models")),
        "{}",
        e.message
    );
    assert!(e.message.contains("connection refused"), "{}", e.message);
}

#[test]
fn an_answer_that_is_not_json_or_lacks_actions_shows_status_and_first_bytes() {
    let html = "<html><body>Bad gateway page from some proxy</body></html>";
    let not_json = stand_in(Some(format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{html}",
        html.len()
    )));
    let e = client(&format!("http://{not_json}/v1"), KEY, 5.0)
        .act("teacher", &[0.0; 6], 6, true)
        .unwrap_err();
    assert_eq!((e.kind, e.status), (ErrorKind::BadAnswer, Some(200)));
    assert!(
        e.message.contains("HTTP 200") && e.message.contains("Bad gateway page"),
        "{}",
        e.message
    );
    assert!(e.message.contains("`actions`"), "{}", e.message);
    let body = format!(
        r#"{{"object":"act","model":"teacher","mean":[[0,0,0]],"pad":"{}"}}"#,
        "x".repeat(400)
    );
    let no_actions = stand_in(Some(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )));
    let e = client(&format!("http://{no_actions}/v1"), KEY, 5.0)
        .act("teacher", &[0.0; 6], 6, true)
        .unwrap_err();
    assert!(
        e.message.contains("missing field `actions`"),
        "{}",
        e.message
    );
    // The first 200 bytes of the body, and no more of it.
    let shown_x = 200 - body.find('x').unwrap();
    let preview = e
        .message
        .split("first 200 bytes of the body:")
        .nth(1)
        .unwrap();
    assert_eq!(preview.matches('x').count(), shown_x, "{}", e.message);
    assert!(
        e.message
            .contains(&format!("({} bytes in all)", body.len())),
        "{}",
        e.message
    );
    // A 502 page from something that is not a clawrl server still shows its status and bytes.
    let gw = stand_in(Some(
        "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 7\r\nConnection: close\r\n\r\nupstrea".into(),
    ));
    let e = client(&format!("http://{gw}/v1"), KEY, 5.0)
        .models()
        .unwrap_err();
    assert!(
        e.message.contains("HTTP 502") && e.message.contains("upstrea"),
        "{}",
        e.message
    );
}

#[test]
fn a_timeout_names_itself_the_url_and_the_key_to_raise() {
    let silent = stand_in(None);
    let t = std::time::Instant::now();
    let e = client(&format!("http://{silent}/v1"), KEY, 0.5)
        .models()
        .unwrap_err();
    assert!(t.elapsed().as_secs_f64() < 5.0);
    assert_eq!(e.kind, ErrorKind::Timeout);
    for part in [
        "0.5 s",
        &format!("http://{silent}/v1/models"),
        "endpoint.timeout",
        "configs/endpoint.toml",
    ] {
        assert!(e.message.contains(part), "{part}: {}", e.message);
    }
}

#[test]
fn a_proxy_that_refuses_or_is_silent_is_named_with_its_variable_and_the_bypass() {
    let s = server();
    let base = format!("http://{}/v1", s.addr);
    let refusing = format!("http://{}", closed_port());
    let env = |k: &str| (k == "HTTP_PROXY").then(|| refusing.clone());
    let c = Client::new(config(&base, KEY, 5.0), &env).unwrap();
    let e = c.models().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Proxy);
    for part in [
        format!("HTTP_PROXY={refusing}"),
        "NO_PROXY=127.0.0.1".into(),
        "unset HTTP_PROXY".into(),
    ] {
        assert!(e.message.contains(&part), "{part}: {}", e.message);
    }
    let silent = format!("http://{}", stand_in(None));
    let env = |k: &str| (k == "ALL_PROXY").then(|| silent.clone());
    let e = Client::new(config(&base, KEY, 0.5), &env)
        .unwrap()
        .models()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Proxy);
    assert!(
        e.message.contains("0.5 s") && e.message.contains(&format!("ALL_PROXY={silent}")),
        "{}",
        e.message
    );
    // NO_PROXY lets the same request through.
    let env = |k: &str| match k {
        "HTTP_PROXY" => Some(refusing.clone()),
        "NO_PROXY" => Some("127.0.0.1".into()),
        _ => None,
    };
    assert!(
        Client::new(config(&base, KEY, 5.0), &env)
            .unwrap()
            .models()
            .is_ok()
    );
}

#[test]
fn an_https_url_without_tls_built_in_says_so_before_any_request() {
    if cfg!(feature = "https") {
        return;
    }
    let e = Client::new(config("https://example.invalid/v1", KEY, 5.0), &no_env)
        .err()
        .unwrap();
    assert!(
        e.message.contains("without TLS") && e.message.contains("--features https"),
        "{}",
        e.message
    );
}

#[test]
fn busy_or_failing_servers_are_retried_then_reported_with_the_count() {
    let models = r#"{"object":"list","data":[]}"#;
    // Two 503s, then the answer: the client gets through on its third try.
    let (addr, tries) = stand_in_seq(vec![
        Some(answer(
            "503 Service Unavailable",
            "Retry-After: 0\r\n",
            "busy",
        )),
        Some(answer("429 Too Many Requests", "", "slow down")),
        Some(answer(
            "200 OK",
            "Content-Type: application/json\r\n",
            models,
        )),
    ]);
    let (list, _) = client(&format!("http://{addr}/v1"), KEY, 5.0)
        .models()
        .unwrap();
    assert!(list.is_empty());
    assert_eq!(tries.load(std::sync::atomic::Ordering::SeqCst), 3);
    // Always 503: the last answer is reported, with the retries it took.
    let (addr, tries) = stand_in_seq(vec![Some(answer(
        "503 Service Unavailable",
        "Retry-After: 0\r\n",
        "down",
    ))]);
    let e = client(&format!("http://{addr}/v1"), KEY, 5.0)
        .models()
        .unwrap_err();
    assert!(
        e.message.contains("HTTP 503") && e.message.contains("down"),
        "{}",
        e.message
    );
    assert_eq!(
        tries.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "1 try + endpoint.retries (2)"
    );
    // A 4xx other than 408/409/429 is an answer, not a hiccup: no retry.
    let (addr, tries) = stand_in_seq(vec![Some(answer("400 Bad Request", "", "no"))]);
    assert!(
        client(&format!("http://{addr}/v1"), KEY, 5.0)
            .models()
            .is_err()
    );
    assert_eq!(tries.load(std::sync::atomic::Ordering::SeqCst), 1);
    // A refused connection is retried too, and says so.
    let port = closed_port();
    let e = client(&format!("http://{port}/v1"), KEY, 5.0)
        .models()
        .unwrap_err();
    assert!(e.message.contains("after 2 retries"), "{}", e.message);
}
