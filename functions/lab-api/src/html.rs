//! Server-rendered pages of the user portal. Every value is escaped.

use std::fmt::Write;

use wearlab_domain::lab::portal::View;

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1d2430}\
h1{font-size:1.5rem}table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.35rem .5rem;\
border-bottom:1px solid #dde}th{background:#f4f6fa}.status{font-family:monospace}.muted{color:#667}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\"><title>{}</title><style>{STYLE}</style></head>\
         <body>{body}</body></html>",
        escape(title)
    )
}

pub fn message_page(title: &str, text: &str) -> String {
    page(title, &format!("<h1>{}</h1><p>{}</p>", escape(title), escape(text)))
}

pub fn portal_page(v: &View) -> String {
    let mut body = String::new();
    let greeting = if v.first_name.is_empty() {
        "Your lab orders".to_owned()
    } else {
        format!("Hello {}", v.first_name)
    };
    let _ = write!(body, "<h1>{}</h1>", escape(&greeting));
    if v.orders.is_empty() {
        body.push_str("<p>You have no lab orders yet.</p>");
    } else {
        body.push_str(
            "<table><thead><tr><th>Ordered</th><th>Tests</th><th>Lab</th><th>Status</th><th>Requisition</th></tr></thead><tbody>",
        );
        for o in &v.orders {
            let tests = if o.lab_tests.is_empty() {
                "Individual markers".to_owned()
            } else {
                o.lab_tests.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
            };
            let link = o
                .requisition_form_url
                .as_deref()
                .map(|u| format!("<a href=\"{}\">PDF</a>", escape(u)))
                .unwrap_or_default();
            let _ = write!(
                body,
                "<tr id=\"order-{id}\"><td>{date}</td><td>{tests}</td><td>{lab}</td><td class=\"status\">{status}</td><td>{link}</td></tr>",
                id = o.id,
                date = o.created_at.format("%Y-%m-%d"),
                tests = escape(&tests),
                lab = escape(&o.lab.name),
                status = escape(&o.status),
            );
        }
        body.push_str("</tbody></table>");
    }
    let _ = write!(
        body,
        "<p class=\"muted\">This link is valid until {} UTC.</p>",
        v.expires_at.format("%Y-%m-%d %H:%M")
    );
    page("Your lab orders", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">O'Neil & co</a>"),
            "&lt;a href=&quot;x&quot;&gt;O&#39;Neil &amp; co&lt;/a&gt;"
        );
    }
}
