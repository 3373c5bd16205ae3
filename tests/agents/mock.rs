//! A model server of ours on 127.0.0.1: the OpenAI Responses API (`POST …/responses`, streamed as
//! server-sent events), which both Codex (`wire_api = "responses"`) and Pi (`"api":
//! "openai-responses"`) speak, and the Anthropic Messages API (`POST /v1/messages`, streamed),
//! which Claude Code speaks. What it answers comes from `script::reply` and `script::claude_reply`;
//! this module is only the HTTP and the SSE framing, with std::net, one thread per connection,
//! `Connection: close`.
//!
//! Every request is recorded, so a test can check what the agents really sent (and that nothing
//! asked for a path we do not serve).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::script;

/// One request as the mock saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub body: Value,
}

struct Shared {
    requests: Mutex<Vec<Request>>,
    /// Numbers the responses: ids are `resp_<n>`, `msg_<n>`, `call_<n>`, deterministic as long as
    /// the agents run one at a time.
    next: AtomicU64,
    stop: AtomicBool,
}

pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockModel {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the mock model on loopback");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let server = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if server.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&server);
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        Self { addr, shared }
    }

    /// The API base Codex and Pi are given (they append `/responses`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The API base Claude Code is given (`ANTHROPIC_BASE_URL`; it appends `/v1/messages`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone the connection"));
    let Some((method, path, body)) = read_request(&mut reader) else {
        return;
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.requests.lock().unwrap().push(Request {
        method: method.clone(),
        path: path.clone(),
        body: body.clone(),
    });
    let mut stream = stream;
    let route = path.split('?').next().unwrap_or_default();
    let events = match method.as_str() {
        "POST" if route.ends_with("/responses") => {
            let n = shared.next.fetch_add(1, Ordering::SeqCst);
            Some(sse(&script::reply(&body, n), n))
        }
        "POST" if route == "/v1/messages" => {
            let n = shared.next.fetch_add(1, Ordering::SeqCst);
            Some(claude_sse(&body, &script::claude_reply(&body, n), n))
        }
        _ => None,
    };
    if let Some(events) = events {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            events.len()
        );
        let _ = stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(&events));
    } else {
        let msg = br#"{"error":{"message":"not served by the ctxfold mock model","type":"invalid_request_error"}}"#;
        let head = format!(
            "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            msg.len()
        );
        let _ = stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(msg));
    }
    let _ = stream.flush();
}

/// Request line, headers, and a body by content-length or chunked transfer encoding.
fn read_request(reader: &mut impl BufRead) -> Option<(String, String, Vec<u8>)> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next()?.to_string();
    let path = words.next()?.to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some((method, path, body))
}

/// The event stream of one response: every item as added, streamed (text deltas) and done, then
/// `response.completed` with the usage. Codex reads the `done` items; Pi (the openai SDK) builds
/// its blocks from `added` and the deltas, so both are sent.
fn sse(reply: &script::Reply, n: u64) -> Vec<u8> {
    let id = format!("resp_{n}");
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": id, "object": "response", "status": "in_progress", "output": []}}),
    ];
    for (index, item) in reply.items.iter().enumerate() {
        if item["type"] == "message" {
            let text = item["content"][0]["text"].clone();
            let item_id = item["id"].clone();
            let mut started = item.clone();
            started["content"] = json!([]);
            started["status"] = json!("in_progress");
            let part = json!({"type": "output_text", "text": "", "annotations": []});
            events.push(json!({"type": "response.output_item.added", "output_index": index, "item": started}));
            events.push(json!({"type": "response.content_part.added", "item_id": item_id, "output_index": index, "content_index": 0, "part": part}));
            events.push(json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": index, "content_index": 0, "delta": text}));
            events.push(json!({"type": "response.output_text.done", "item_id": item_id, "output_index": index, "content_index": 0, "text": text}));
            events.push(json!({"type": "response.content_part.done", "item_id": item_id, "output_index": index, "content_index": 0, "part": item["content"][0]}));
        } else {
            events.push(
                json!({"type": "response.output_item.added", "output_index": index, "item": item}),
            );
        }
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    let usage = json!({
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + 20,
    });
    events.push(json!({"type": "response.completed", "response": {"id": id, "object": "response", "status": "completed", "model": "mock-model", "output": reply.items, "usage": usage}}));
    let mut out = Vec::new();
    for (seq, mut event) in events.into_iter().enumerate() {
        event["sequence_number"] = json!(seq);
        let kind = event["type"].as_str().unwrap().to_string();
        out.extend_from_slice(format!("event: {kind}\ndata: {event}\n\n").as_bytes());
    }
    out
}

/// The Messages API event stream of one reply: `message_start`, each block started, given whole
/// in one delta and stopped, then `message_delta` (stop reason, usage) and `message_stop`.
fn claude_sse(request: &Value, reply: &script::ClaudeReply, n: u64) -> Vec<u8> {
    let usage = json!({"input_tokens": reply.input_tokens, "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0, "output_tokens": 20});
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": format!("msg_{n:04}"), "type": "message", "role": "assistant",
        "model": request["model"], "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": usage}})];
    for (index, block) in reply.blocks.iter().enumerate() {
        let (start, delta) = match block["type"].as_str() {
            Some("tool_use") => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            ),
            _ => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": reply.stop_reason, "stop_sequence": null}, "usage": usage}));
    events.push(json!({"type": "message_stop"}));
    let mut out = Vec::new();
    for event in events {
        let kind = event["type"].as_str().unwrap().to_string();
        out.extend_from_slice(format!("event: {kind}\ndata: {event}\n\n").as_bytes());
    }
    out
}
