//! The served API against a real server on 127.0.0.1: shapes of the answers, the numbers in
//! them (bit for bit the local policy's), and every refusal with its status and what it says.
mod common;

use clawrl_endpoint::server::{ServeOptions, Server, check};
use common::*;

fn bearer() -> String {
    format!("Bearer {KEY}")
}

#[test]
fn models_are_listed_the_way_unified_api_clients_parse_them() {
    let s = server();
    let (status, body) = get(s.addr, "/v1/models", Some(&bearer()));
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "list");
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["teacher", "student", "sac"]);
    let student = &v["data"][1];
    assert_eq!(student["object"], "model");
    assert_eq!(student["observation"]["dim"], 4);
    assert_eq!(student["observation"]["frame_dim"], 2);
    assert_eq!(student["observation"]["history"], 1);
    assert_eq!(student["observation"]["source"], "onboard");
    assert_eq!(student["action"]["dim"], 3);
    assert_eq!(student["sha256"], "ab".repeat(32));
    let (status, one) = get(s.addr, "/v1/models/sac", Some(&bearer()));
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&one).unwrap()["action"]["squashed"],
        true
    );
    // Health needs no key.
    let (status, body) = get(s.addr, "/health", None);
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"status":"ok","models":3}"#)
    );
}

#[test]
fn act_answers_the_local_policys_numbers_bit_for_bit() {
    let s = server();
    let local = policy("gaussian_mlp", 6, 0, 1);
    let sac = policy("squashed_gaussian_mlp", 6, 0, 3);
    let rows: Vec<Vec<f32>> = (0..64)
        .map(|r| {
            (0..6)
                .map(|c| ((r * 6 + c) as f32 * 0.731).sin() * 3.0 + 1e-7 * r as f32)
                .collect()
        })
        .collect();
    let flat: Vec<f32> = rows.iter().flatten().copied().collect();
    for (id, p) in [("teacher", &local), ("sac", &sac)] {
        let body = serde_json::json!({"model": id, "observations": rows}).to_string();
        let (status, answer) = post(s.addr, "/v1/act", Some(&bearer()), &body);
        assert_eq!(status, 200, "{answer}");
        let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
        let col = |k: &str| -> Vec<f32> {
            v[k].as_array()
                .unwrap()
                .iter()
                .flat_map(|r| {
                    r.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap() as f32)
                })
                .collect()
        };
        let g = p.gaussians(&flat).unwrap();
        let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&col("mean")), bits(&g.mean), "{id} mean");
        assert_eq!(bits(&col("log_std")), bits(&g.log_std), "{id} log_std");
        assert_eq!(
            bits(&col("actions")),
            bits(&p.actions(&flat).unwrap()),
            "{id} actions"
        );
        assert_eq!(v["actions"].as_array().unwrap().len(), 64);
    }
}

#[test]
fn sampled_actions_follow_the_seed_and_differ_from_the_mean() {
    let s = server();
    let body = |seed: u64| {
        serde_json::json!({"model": "teacher", "observations": [[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]], "deterministic": false, "seed": seed}).to_string()
    };
    let act = |seed| {
        let (st, a) = post(s.addr, "/v1/act", Some(&bearer()), &body(seed));
        assert_eq!(st, 200, "{a}");
        let v: serde_json::Value = serde_json::from_str(&a).unwrap();
        (v["actions"].clone(), v["mean"].clone())
    };
    let (a1, mean) = act(5);
    let (a2, _) = act(5);
    let (a3, _) = act(6);
    assert_eq!(a1, a2);
    assert_ne!(a1, a3);
    assert_ne!(a1, mean);
}

#[test]
fn each_key_mistake_gets_a_401_that_says_which() {
    let s = server();
    let cases = [
        (None, "missing_api_key", "no Authorization header"),
        (
            Some(KEY.to_string()),
            "invalid_authorization_scheme",
            "`Bearer ` prefix",
        ),
        (
            Some(format!("Token {KEY}")),
            "invalid_authorization_scheme",
            "`Bearer ` prefix",
        ),
        (Some("Bearer ".to_string()), "missing_api_key", "empty"),
        (
            Some(format!("Bearer  {KEY}")),
            "invalid_api_key",
            "padded with whitespace",
        ),
        (
            Some("Bearer wrong-key".to_string()),
            "invalid_api_key",
            "not the one",
        ),
    ];
    for (auth, code, says) in cases {
        for (status, body) in [
            get(s.addr, "/v1/models", auth.as_deref()),
            post(
                s.addr,
                "/v1/act",
                auth.as_deref(),
                r#"{"model":"teacher","observations":[[0,0,0,0,0,0]]}"#,
            ),
        ] {
            assert_eq!(status, 401, "{auth:?}: {body}");
            let e = error_of(&body);
            assert_eq!(e["type"], "authentication_error");
            assert_eq!(e["code"], code, "{auth:?}: {body}");
            assert!(
                e["message"].as_str().unwrap().contains(says),
                "{auth:?}: {body}"
            );
            assert!(!body.contains(KEY), "the answer echoes the key: {body}");
        }
    }
}

/// Every keyed route, as (method, path, body): the listing, one model (one that exists and one
/// that does not, so a wrong key never learns which ids are served) and act.
const KEYED_ROUTES: [(&str, &str, &str); 4] = [
    ("GET", "/v1/models", ""),
    ("GET", "/v1/models/teacher", ""),
    ("GET", "/v1/models/no-such-model", ""),
    (
        "POST",
        "/v1/act",
        r#"{"model":"teacher","observations":[[0,0,0,0,0,0]]}"#,
    ),
];

fn call(s: &Server, (method, path, body): (&str, &str, &str), auth: Option<&str>) -> (u16, String) {
    match method {
        "GET" => get(s.addr, path, auth),
        _ => post(s.addr, path, auth, body),
    }
}

#[test]
fn every_keyed_route_refuses_every_near_miss_of_the_key() {
    let s = server();
    let prefix = &KEY[..KEY.len() - 1];
    let misses = [
        None,
        Some("Bearer wrong-key".to_string()),
        Some(format!("Bearer {prefix}")),
        Some(format!("Bearer {}", &KEY[..1])),
        Some(format!("Bearer {KEY}x")),
        Some(format!("Bearer {KEY}{KEY}")),
        Some(format!("Basic {KEY}")),
        Some(format!("Bearer{KEY}")),
        Some(format!("Bearer\t{KEY}")),
    ];
    for route in KEYED_ROUTES {
        for auth in &misses {
            let (status, body) = call(&s, route, auth.as_deref());
            assert_eq!(status, 401, "{route:?} with {auth:?}: {body}");
            assert_eq!(error_of(&body)["type"], "authentication_error", "{body}");
        }
        // The right key passes the check on every route (the unknown model is then a 404).
        let (status, body) = call(&s, route, Some(&bearer()));
        let want = if route.1.ends_with("no-such-model") {
            404
        } else {
            200
        };
        assert_eq!(status, want, "{route:?} with the right key: {body}");
    }
}

#[test]
fn bad_observations_and_requests_are_refused_with_their_status() {
    let s = server();
    let auth = bearer();
    let cases: [(&str, u16, &str, &str); 8] = [
        (
            r#"{"model":"teacher","observations":[[1,2,3,4,5,NaN]]}"#,
            400,
            "invalid_observation",
            "observations[0][5]",
        ),
        (
            r#"{"model":"teacher","observations":[[1,2,3],[1,2,3,4,5,6]]}"#,
            400,
            "invalid_observation",
            "observations[0] has 3 values",
        ),
        (
            r#"{"model":"teacher","observations":[]}"#,
            400,
            "invalid_observation",
            "empty",
        ),
        (
            r#"{"model":"teacher","observations":[[1,2,3,4,5,Infinity]]}"#,
            400,
            "invalid_observation",
            "NaN, infinite",
        ),
        ("not json", 400, "invalid_json", "not JSON"),
        (
            r#"{"observations":[[1,2,3,4,5,6]]}"#,
            422,
            "invalid_request",
            "model",
        ),
        (
            r#"{"model":"critic","observations":[[1,2,3,4,5,6]]}"#,
            404,
            "model_not_found",
            "`teacher`, `student`, `sac`",
        ),
        (
            r#"{"model":"teacher","observations":[[1,2,3,4,5,1e39]]}"#,
            400,
            "invalid_observation",
            "range of f32",
        ),
    ];
    for (body, status, code, says) in cases {
        let (st, answer) = post(s.addr, "/v1/act", Some(&auth), body);
        assert_eq!(st, status, "{body}: {answer}");
        let e = error_of(&answer);
        assert_eq!(e["code"], code, "{body}: {answer}");
        assert!(
            e["message"].as_str().unwrap().contains(says),
            "{body}: {answer}"
        );
    }
    let (st, answer) = get(s.addr, "/v1/v1/models", Some(&auth));
    assert_eq!(st, 404);
    assert_eq!(error_of(&answer)["code"], "unknown_path");
    let (st, answer) = get(s.addr, "/v1/act", Some(&auth));
    assert_eq!(
        (st, error_of(&answer)["code"].as_str().unwrap()),
        (405, "method_not_allowed")
    );
}

#[test]
fn bodies_and_batches_over_the_limits_are_413() {
    let s = server_with(ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        api_key: Some(KEY.into()),
        max_body_bytes: 1000,
        max_batch: 4,
    });
    let big = format!(
        r#"{{"model":"teacher","observations":[[{}]]}}"#,
        vec!["1.0"; 400].join(",")
    );
    let (st, answer) = post(s.addr, "/v1/act", Some(&bearer()), &big);
    assert_eq!(st, 413, "{answer}");
    assert_eq!(error_of(&answer)["code"], "request_too_large");
    let five =
        serde_json::json!({"model": "teacher", "observations": vec![vec![0.0; 6]; 5]}).to_string();
    let (st, answer) = post(s.addr, "/v1/act", Some(&bearer()), &five);
    assert_eq!(st, 413, "{answer}");
    assert!(
        error_of(&answer)["message"]
            .as_str()
            .unwrap()
            .contains("at most 4")
    );
}

#[test]
fn a_non_loopback_address_needs_a_key_and_ids_must_be_unique() {
    let open = ServeOptions {
        listen: "0.0.0.0:0".parse().unwrap(),
        api_key: None,
        ..Default::default()
    };
    let e = check(&models(), &open).unwrap_err();
    assert!(
        e.contains("without an API key") && e.contains("CLAWRL_API_KEY"),
        "{e}"
    );
    // Off loopback a key must resist guessing: one character, or one short of the minimum, is
    // refused; the minimum passes. On loopback a short key stays allowed.
    for short in ["k", "0123456789abcde"] {
        let e = check(
            &models(),
            &ServeOptions {
                api_key: Some(short.into()),
                ..open.clone()
            },
        )
        .unwrap_err();
        assert!(e.contains("at least 16"), "{short}: {e}");
    }
    let keyed = ServeOptions {
        api_key: Some("0123456789abcdef".into()),
        ..open.clone()
    };
    assert!(check(&models(), &keyed).is_ok());
    let short_on_loopback = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        api_key: Some("k".into()),
        ..open.clone()
    };
    assert!(check(&models(), &short_on_loopback).is_ok());
    // Limits of zero would refuse every request: refused at start.
    for (body, batch) in [(0, 65_536), (16 << 20, 0)] {
        let zero = ServeOptions {
            max_body_bytes: body,
            max_batch: batch,
            ..keyed.clone()
        };
        assert!(
            check(&models(), &zero).unwrap_err().contains("above 0"),
            "{body} {batch}"
        );
    }
    let loopback = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..open
    };
    assert!(check(&models(), &loopback).is_ok());
    let padded = ServeOptions {
        api_key: Some("k ".into()),
        ..loopback.clone()
    };
    assert!(check(&models(), &padded).unwrap_err().contains("padded"));
    let mut twice = models();
    twice.push(served("teacher", policy("gaussian_mlp", 6, 0, 9)));
    assert!(check(&twice, &loopback).unwrap_err().contains("`teacher`"));
}

#[test]
fn without_a_key_a_loopback_server_answers_anyone() {
    let s = server_with(ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..Default::default()
    });
    let (st, _) = get(s.addr, "/v1/models", None);
    assert_eq!(st, 200);
}
