//! A model that does not load: the error names the file and carries MuJoCo's own message, so
//! the person reading it learns what MuJoCo objected to, and where.
use std::path::PathBuf;

use clawrl_sim::SimError;
use clawrl_sim::model::load;

fn write(name: &str, xml: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("clawrl-model-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, xml).unwrap();
    path
}

/// MuJoCo's reason for refusing `xml`, with the whole error message.
fn reason_for(name: &str, xml: &str) -> (String, String) {
    let path = write(name, xml);
    let err = load(&path).expect_err("a broken model must not load");
    let msg = err.to_string();
    let SimError::ModelLoad { file, reason } = err else {
        panic!("not a load error: {msg}");
    };
    assert_eq!(file, path);
    assert!(msg.contains(name), "the message names the file: {msg}");
    assert!(
        msg.contains(&reason),
        "the message carries the reason: {msg}"
    );
    std::fs::remove_file(&path).ok();
    (reason, msg)
}

#[test]
fn an_unknown_element_is_reported_with_mujocos_schema_message() {
    // MuJoCo's schema check: "Schema violation: unrecognized element", with the element's name
    // and line.
    let (reason, msg) = reason_for(
        "unknown_element.xml",
        "<mujoco>\n  <worldbody>\n    <blob name=\"x\"/>\n  </worldbody>\n</mujoco>\n",
    );
    assert!(
        reason.contains("unrecognized element"),
        "MuJoCo's text: {msg}"
    );
    assert!(reason.contains("blob"), "names the element: {msg}");
    assert!(reason.contains("line 3"), "names the line: {msg}");
}

#[test]
fn malformed_xml_is_reported_with_the_parsers_message() {
    // A closing tag that does not match: tinyxml2's error, through MuJoCo's "XML parse error".
    let (reason, msg) = reason_for(
        "mismatched.xml",
        "<mujoco>\n  <worldbody>\n    <body>\n  </worldbody>\n</mujoco>\n",
    );
    assert!(reason.contains("XML parse error"), "MuJoCo's text: {msg}");
}

#[test]
fn a_bad_attribute_value_is_reported_with_the_attribute() {
    let (reason, msg) = reason_for(
        "bad_attribute.xml",
        "<mujoco>\n  <worldbody>\n    <geom type=\"sphere\" size=\"big\"/>\n  </worldbody>\n</mujoco>\n",
    );
    // "XML Error: bad format in attribute 'size'", "Element 'geom', line 3".
    assert!(
        reason.contains("bad format in attribute 'size'"),
        "MuJoCo's text: {msg}"
    );
    assert!(reason.contains("Element 'geom', line 3"), "{msg}");
}

#[test]
fn a_missing_file_says_so() {
    let path = std::env::temp_dir().join("clawrl-no-such-model.xml");
    let err = load(&path).expect_err("no file, no model");
    assert!(
        matches!(&err, SimError::ModelLoad { reason, .. } if reason.starts_with("no such file")),
        "{err}"
    );
}
