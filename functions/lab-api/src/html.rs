//! Server-rendered pages of the user portal. Every value is escaped; the shell, headers and
//! CSRF field come from `wearlab_web::pages`. No script: links and forms do all the work.

use std::fmt::Write;

use axum::http::StatusCode;
use uuid::Uuid;
use wearlab_domain::lab::portal::{Centers, OrderView, View};
use wearlab_domain::lab::verification::{Channel, Destinations, MAX_ATTEMPTS};
use wearlab_domain::linking::encode;
use wearlab_models::lab::{CollectionMethod, Order};
use wearlab_web::pages::{Page, csrf_input, escape};

/// The addresses of one opened link's pages. Only the opaque link (token or code) and order
/// ids ever appear in them.
#[derive(Debug, Clone)]
pub enum LinkPaths {
    /// A launch link: `/v3/portal?token=...`.
    Launch(String),
    /// A short communications link: `/v3/p/{code}`.
    Short(String),
}

impl LinkPaths {
    pub fn home(&self) -> String {
        match self {
            Self::Launch(t) => format!("/v3/portal?token={}", encode(t)),
            Self::Short(c) => format!("/v3/p/{}", encode(c)),
        }
    }

    pub fn order(&self, id: Uuid) -> String {
        match self {
            Self::Launch(t) => format!("/v3/portal/orders/{id}?token={}", encode(t)),
            Self::Short(c) => format!("/v3/p/{}/orders/{id}", encode(c)),
        }
    }

    fn short(&self) -> &str {
        match self {
            Self::Launch(t) | Self::Short(t) => t,
        }
    }

    pub fn send_code(&self) -> String {
        format!("/v3/p/{}/verify/send", encode(self.short()))
    }

    pub fn verify(&self) -> String {
        format!("/v3/p/{}/verify", encode(self.short()))
    }
}

/// What an order's status means to a patient (the exact status is shown beside it).
fn status_text(status: &str) -> &'static str {
    match status.split('.').next().unwrap_or_default() {
        "received" => "Ordered",
        "collecting_sample" => "Waiting for your sample",
        "sample_with_lab" => "Your sample is at the lab",
        "completed" => "Results ready",
        "cancelled" => "Cancelled",
        "failed" => "Could not be completed",
        _ => "In progress",
    }
}

fn status(o: &Order) -> String {
    format!("{} <span class=\"status\">({})</span>", escape(status_text(&o.status)), escape(&o.status))
}

fn tests(o: &Order) -> String {
    if o.lab_tests.is_empty() {
        "Individual markers".to_owned()
    } else {
        o.lab_tests.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
    }
}

fn requisition_link(o: &Order) -> String {
    o.requisition_form_url
        .as_deref()
        .map(|u| format!("<a href=\"{}\">Requisition form (PDF)</a>", escape(u)))
        .unwrap_or_default()
}

fn valid_until(expires_at: chrono::DateTime<chrono::Utc>) -> String {
    format!("<p class=\"muted\">This link is valid until {} UTC.</p>", expires_at.format("%Y-%m-%d %H:%M"))
}

/// The user's orders.
pub fn portal_page(v: &View, paths: &LinkPaths) -> Page {
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
        body.push_str("<h2>Your lab orders</h2>");
        for o in &v.orders {
            let _ = write!(
                body,
                "<section class=\"card\" id=\"order-{id}\" aria-labelledby=\"order-{id}-title\">\
                 <h3 id=\"order-{id}-title\">{tests}</h3><dl class=\"facts\">\
                 <dt>Ordered</dt><dd>{date}</dd><dt>Lab</dt><dd>{lab}</dd><dt>Status</dt><dd>{status}</dd></dl>\
                 <p><a class=\"button\" href=\"{details}\">Details, draw sites and results</a></p><p>{req}</p></section>",
                id = o.id,
                tests = escape(&tests(o)),
                date = o.created_at.format("%Y-%m-%d"),
                lab = escape(&o.lab.name),
                status = status(o),
                details = escape(&paths.order(o.id)),
                req = requisition_link(o),
            );
        }
    }
    body.push_str(&valid_until(v.expires_at));
    Page::new("Your lab orders", body).wide()
}

/// One order: status, where to give the sample, the requisition and the results.
pub fn order_page(v: &OrderView, paths: &LinkPaths, back: bool) -> Page {
    let o = &v.order;
    let mut body = String::new();
    if back {
        let _ = write!(body, "<p><a href=\"{}\">All your orders</a></p>", escape(&paths.home()));
    }
    let _ = write!(
        body,
        "<h1>{tests}</h1><section class=\"card\" id=\"order-{id}\" aria-label=\"Order\"><dl class=\"facts\">\
         <dt>Ordered</dt><dd>{date}</dd><dt>Lab</dt><dd>{lab}</dd><dt>Status</dt><dd>{status}</dd></dl>\
         <p>{req}</p></section>",
        tests = escape(&tests(o)),
        id = o.id,
        date = o.created_at.format("%Y-%m-%d"),
        lab = escape(&o.lab.name),
        status = status(o),
        req = requisition_link(o),
    );
    body.push_str("<h2 id=\"centers\">Where to give your sample</h2>");
    match &v.centers {
        Centers::Near { radius_miles, centers } if centers.is_empty() => {
            let _ = write!(
                body,
                "<p>No patient service center of this lab is within {radius_miles} miles of your address.</p>"
            );
        }
        Centers::Near { radius_miles, centers } => {
            let _ = write!(
                body,
                "<p>Patient service centers of {} within {radius_miles} miles of your address, nearest first. \
                 Bring your requisition form.</p><ul class=\"providers\" id=\"psc-list\">",
                escape(&o.lab.name)
            );
            for c in centers {
                let m = &c.metadata;
                let second = m.second_line.as_deref().map(|s| format!(", {}", escape(s))).unwrap_or_default();
                let phone = m
                    .phone_number
                    .as_deref()
                    .map(|p| format!("<br><a href=\"tel:{0}\">{0}</a>", escape(p)))
                    .unwrap_or_default();
                let _ = write!(
                    body,
                    "<li class=\"card psc\"><strong>{name}</strong> <span class=\"muted\">{dist} mi</span><br>\
                     {line}{second}, {city}, {state} {zip}{phone}</li>",
                    name = escape(&m.name),
                    dist = escape(&c.distance),
                    line = escape(&m.first_line),
                    city = escape(&m.city),
                    state = escape(&m.state),
                    zip = escape(&m.zip_code),
                );
            }
            body.push_str("</ul>");
        }
        Centers::NotNeeded => {
            let how = match o.collection_method {
                CollectionMethod::Testkit => "A test kit is sent to you: no visit to a draw site is needed.",
                _ => "A phlebotomist comes to you: no visit to a draw site is needed.",
            };
            let _ = write!(body, "<p>{how}</p>");
        }
        Centers::Unknown => body.push_str(
            "<p>We could not find draw sites for your address. Contact the team that ordered the test.</p>",
        ),
    }
    body.push_str("<h2 id=\"results\">Results</h2>");
    match &v.results {
        None => body.push_str("<p>No results yet. They appear here when the lab reports them.</p>"),
        Some(r) => {
            let _ = write!(
                body,
                "<p>Status: <span class=\"status\">{}</span></p><div class=\"scroll\"><table><thead><tr>\
                 <th scope=\"col\">Test</th><th scope=\"col\">Result</th><th scope=\"col\">Reference range</th>\
                 <th scope=\"col\">Interpretation</th></tr></thead><tbody>",
                escape(&r.metadata.status)
            );
            for e in &r.results {
                let range = match (e.min_range_value, e.max_range_value) {
                    (Some(lo), Some(hi)) => format!("{lo} – {hi}"),
                    (Some(lo), None) => format!("≥ {lo}"),
                    (None, Some(hi)) => format!("≤ {hi}"),
                    (None, None) => String::new(),
                };
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td></tr>",
                    escape(&e.name),
                    escape(&e.result),
                    escape(e.unit.as_deref().unwrap_or_default()),
                    escape(&range),
                    escape(e.interpretation.as_str()),
                );
            }
            body.push_str("</tbody></table></div>");
        }
    }
    body.push_str(&valid_until(v.expires_at));
    Page::new(format!("Order: {}", tests(o)), body).wide()
}

fn channel_label(c: Channel) -> &'static str {
    match c {
        Channel::Email => "Email",
        Channel::Sms => "Text message",
    }
}

/// The identity check's first step: where to send the code.
pub fn verify_start(d: &Destinations, paths: &LinkPaths, csrf: &str, error: Option<&str>) -> Page {
    let mut body = String::from("<h1>Confirm it's you</h1>");
    if let Some(e) = error {
        let _ = write!(body, "<p class=\"error\" role=\"alert\">{}</p>", escape(e));
    }
    let options: Vec<(Channel, &str)> =
        [Channel::Email, Channel::Sms].into_iter().filter_map(|c| d.hint(c).map(|h| (c, h))).collect();
    if options.is_empty() {
        body.push_str(
            "<p>We have no email address or phone number to send you a code. Contact the team that sent you this link.</p>",
        );
        return Page::new("Confirm it's you", body).status(StatusCode::CONFLICT);
    }
    let _ = write!(
        body,
        "<p>To protect your health information, we send a one-time code before showing it on a new device.</p>\
         <form method=\"post\" action=\"{}\" class=\"card\">{}<fieldset><legend>Send the code by</legend>",
        escape(&paths.send_code()),
        csrf_input(csrf)
    );
    for (i, (c, hint)) in options.iter().enumerate() {
        let _ = write!(
            body,
            "<label class=\"choice\" for=\"channel-{v}\"><input type=\"radio\" id=\"channel-{v}\" name=\"channel\" \
             value=\"{v}\"{checked}> {label} to {hint}</label>",
            v = c.as_str(),
            checked = if i == 0 { " checked" } else { "" },
            label = channel_label(*c),
            hint = escape(hint),
        );
    }
    body.push_str("</fieldset><button type=\"submit\">Send code</button></form>");
    Page::new("Confirm it's you", body)
}

/// The identity check's second step: type the code.
pub fn verify_code(
    paths: &LinkPaths,
    csrf: &str,
    channel: Channel,
    hint: &str,
    notice: Option<&str>,
    error: Option<&str>,
) -> Page {
    let mut body = String::from("<h1>Enter your code</h1>");
    if let Some(e) = error {
        let _ = write!(body, "<p class=\"error\" id=\"code-error\" role=\"alert\">{}</p>", escape(e));
    }
    if let Some(n) = notice {
        let _ = write!(body, "<p class=\"notice\" role=\"status\">{}</p>", escape(n));
    }
    let described =
        if error.is_some() { " aria-invalid=\"true\" aria-describedby=\"code-error\"" } else { "" };
    let _ = write!(
        body,
        "<p>We sent a 6-digit code by {how} to {hint}. It is valid for 10 minutes.</p>\
         <form method=\"post\" action=\"{verify}\" class=\"card\">{csrf}\
         <input type=\"hidden\" name=\"channel\" value=\"{channel}\">\
         <label for=\"code\">Code</label>\
         <input id=\"code\" name=\"code\" type=\"text\" inputmode=\"numeric\" autocomplete=\"one-time-code\" \
         required maxlength=\"12\" autofocus{described}>\
         <button type=\"submit\">Verify</button></form>\
         <form method=\"post\" action=\"{send}\">{csrf}<input type=\"hidden\" name=\"channel\" value=\"{channel}\">\
         <button type=\"submit\" class=\"secondary\">Send a new code</button></form>",
        how = channel_label(channel).to_lowercase(),
        hint = escape(hint),
        verify = escape(&paths.verify()),
        send = escape(&paths.send_code()),
        csrf = csrf_input(csrf),
        channel = channel.as_str(),
    );
    Page::new("Enter your code", body)
}

/// After the last wrong try: a new code is needed.
pub fn too_many_attempts(paths: &LinkPaths, csrf: &str, channel: Channel) -> Page {
    let body = format!(
        "<h1>Too many tries</h1><p class=\"error\" role=\"alert\">The code was entered wrongly {MAX_ATTEMPTS} times \
         and no longer works. Ask for a new code.</p>\
         <form method=\"post\" action=\"{}\">{}<input type=\"hidden\" name=\"channel\" value=\"{}\">\
         <button type=\"submit\">Send a new code</button></form>",
        escape(&paths.send_code()),
        csrf_input(csrf),
        channel.as_str()
    );
    Page::new("Too many tries", body).status(StatusCode::TOO_MANY_REQUESTS)
}
