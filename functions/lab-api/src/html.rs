//! Server-rendered pages of the user portal, in the reader's language: every text comes from
//! the catalogue (`wearlab_web::i18n`, the `portal` section of `shared/web/locales/*.txt`),
//! dates and numbers are written in the language's conventions. Every value is escaped; the
//! shell, headers and CSRF field come from `wearlab_web::pages`. No script: links and forms do
//! all the work.
//!
//! An order's internal status code (`received.walk_in_test.ordered`) is not shown: the reader
//! sees its stage in words (`wearlab_domain::lab::portal::Stage`). The code stays in the
//! order's `data-status` attribute, for support reading the page's source.

use std::fmt::Write;

use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use wearlab_domain::lab::portal::{self, Centers, Flag, OrderView, Stage, View};
use wearlab_domain::lab::verification::{Channel, Destinations, MAX_ATTEMPTS};
use wearlab_domain::linking::encode;
use wearlab_models::lab::{CollectionMethod, Interpretation, Order, ResultEntry};
use wearlab_web::i18n::{Catalogue, Language, catalogue};
use wearlab_web::pages::{Page, csrf_input, escape};

/// The addresses of one opened link's pages. Only the opaque link (token or code), order ids
/// and the reader's explicit language (kept from page to page when one was given) ever appear
/// in them.
#[derive(Debug, Clone)]
pub struct LinkPaths {
    link: Link,
    lang: Option<Language>,
}

#[derive(Debug, Clone)]
enum Link {
    /// A launch link: `/v3/portal?token=...`.
    Launch(String),
    /// A short communications link: `/v3/p/{code}`.
    Short(String),
}

impl LinkPaths {
    pub fn launch(token: String, lang: Option<Language>) -> Self {
        Self { link: Link::Launch(token), lang }
    }

    pub fn short(code: String, lang: Option<Language>) -> Self {
        Self { link: Link::Short(code), lang }
    }

    /// `&lang=..` or `?lang=..` when the reader chose a language explicitly.
    fn lang(&self, first: bool) -> String {
        self.lang.map(|l| format!("{}lang={}", if first { '?' } else { '&' }, l.tag())).unwrap_or_default()
    }

    pub fn home(&self) -> String {
        match &self.link {
            Link::Launch(t) => format!("/v3/portal?token={}{}", encode(t), self.lang(false)),
            Link::Short(c) => format!("/v3/p/{}{}", encode(c), self.lang(true)),
        }
    }

    pub fn order(&self, id: Uuid) -> String {
        match &self.link {
            Link::Launch(t) => format!("/v3/portal/orders/{id}?token={}{}", encode(t), self.lang(false)),
            Link::Short(c) => format!("/v3/p/{}/orders/{id}{}", encode(c), self.lang(true)),
        }
    }

    fn short_code(&self) -> &str {
        match &self.link {
            Link::Launch(t) | Link::Short(t) => t,
        }
    }

    pub fn send_code(&self) -> String {
        format!("/v3/p/{}/verify/send{}", encode(self.short_code()), self.lang(true))
    }

    pub fn verify(&self) -> String {
        format!("/v3/p/{}/verify{}", encode(self.short_code()), self.lang(true))
    }
}

/// The catalogue key of a stage's words.
fn stage_key(s: Stage) -> &'static str {
    match s {
        Stage::Ordered => "portal.status.ordered",
        Stage::RequisitionReady => "portal.status.requisition_ready",
        Stage::VisitDrawSite => "portal.status.visit_draw_site",
        Stage::AppointmentPending => "portal.status.appointment_pending",
        Stage::AppointmentScheduled => "portal.status.appointment_scheduled",
        Stage::KitOnTheWay => "portal.status.kit_on_the_way",
        Stage::KitDelivered => "portal.status.kit_delivered",
        Stage::SampleOnTheWay => "portal.status.sample_on_the_way",
        Stage::SampleCollected => "portal.status.sample_collected",
        Stage::SampleAtLab => "portal.status.sample_at_lab",
        Stage::SomeResults => "portal.status.some_results",
        Stage::ResultsReady => "portal.status.results_ready",
        Stage::Cancelled => "portal.status.cancelled",
        Stage::Failed => "portal.status.failed",
        Stage::WaitingForSample => "portal.status.waiting_for_sample",
        Stage::InProgress => "portal.status.in_progress",
    }
}

fn status(c: &Catalogue, o: &Order) -> String {
    format!("<span class=\"stage\">{}</span>", escape(c.get(stage_key(Stage::of(&o.status)))))
}

fn tests(c: &Catalogue, o: &Order) -> String {
    if o.lab_tests.is_empty() {
        c.get("portal.individual_markers").to_owned()
    } else {
        o.lab_tests.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
    }
}

fn requisition_link(c: &Catalogue, o: &Order) -> String {
    o.requisition_form_url
        .as_deref()
        .map(|u| format!("<a href=\"{}\">{}</a>", escape(u), escape(c.get("portal.requisition"))))
        .unwrap_or_default()
}

fn date(c: &Catalogue, at: DateTime<Utc>) -> String {
    c.date(at.date_naive())
}

fn valid_until(c: &Catalogue, expires_at: DateTime<Utc>) -> String {
    let text = c.fill(
        "portal.valid_until",
        &[("date", &date(c, expires_at)), ("time", &expires_at.format("%H:%M").to_string())],
    );
    format!("<p class=\"muted\">{}</p>", escape(&text))
}

/// The facts every order shows: when it was ordered, the lab and where it is now.
fn facts(c: &Catalogue, o: &Order) -> String {
    format!(
        "<dl class=\"facts\"><dt>{ordered}</dt><dd>{date}</dd><dt>{lab_label}</dt><dd>{lab}</dd>\
         <dt>{status_label}</dt><dd>{status}</dd></dl>",
        ordered = escape(c.get("portal.ordered_on")),
        date = escape(&date(c, o.created_at)),
        lab_label = escape(c.get("portal.lab")),
        lab = escape(&o.lab.name),
        status_label = escape(c.get("portal.status")),
        status = status(c, o),
    )
}

/// The user's orders.
pub fn portal_page(v: &View, paths: &LinkPaths, lang: Language) -> Page {
    let c = catalogue(lang);
    let mut body = String::new();
    let greeting = if v.first_name.is_empty() {
        c.get("portal.title").to_owned()
    } else {
        c.fill("portal.hello", &[("name", &v.first_name)])
    };
    let _ = write!(body, "<h1>{}</h1>", escape(&greeting));
    if v.orders.is_empty() {
        let _ = write!(body, "<p>{}</p>", escape(c.get("portal.no_orders")));
    } else {
        let _ = write!(body, "<h2>{}</h2>", escape(c.get("portal.title")));
        for o in &v.orders {
            let _ = write!(
                body,
                "<section class=\"card\" id=\"order-{id}\" data-status=\"{code}\" aria-labelledby=\"order-{id}-title\">\
                 <h3 id=\"order-{id}-title\">{tests}</h3>{facts}\
                 <p><a class=\"button\" href=\"{details}\">{details_text}</a></p><p>{req}</p></section>",
                id = o.id,
                code = escape(&o.status),
                tests = escape(&tests(c, o)),
                facts = facts(c, o),
                details = escape(&paths.order(o.id)),
                details_text = escape(c.get("portal.details")),
                req = requisition_link(c, o),
            );
        }
    }
    body.push_str(&valid_until(c, v.expires_at));
    Page::new(c.get("portal.title"), body).wide().language(lang)
}

/// The order's history, oldest first, as an ordered list whose last item is the current step.
fn timeline(c: &Catalogue, o: &Order) -> String {
    let steps = portal::timeline(o);
    let mut out = format!(
        "<h2 id=\"timeline-title\">{}</h2><ol class=\"timeline\" aria-labelledby=\"timeline-title\">",
        escape(c.get("portal.timeline"))
    );
    for (i, s) in steps.iter().enumerate() {
        let current = i + 1 == steps.len();
        let _ = write!(
            out,
            "<li{attr}><span class=\"stage\">{stage}</span> <span class=\"muted\">{date}</span>{now}</li>",
            attr = if current { " class=\"current\" aria-current=\"step\"" } else { "" },
            stage = escape(c.get(stage_key(s.stage))),
            date = escape(&date(c, s.at)),
            now = if current {
                format!(" <strong class=\"now\">{}</strong>", escape(c.get("portal.timeline.now")))
            } else {
                String::new()
            },
        );
    }
    out.push_str("</ol>");
    out
}

/// A bound of a reference range in the reader's conventions (up to three decimals, trailing
/// zeros dropped).
fn bound(c: &Catalogue, v: f64) -> String {
    c.number(v, 3)
}

fn range(c: &Catalogue, e: &ResultEntry) -> String {
    match (e.min_range_value, e.max_range_value) {
        (Some(lo), Some(hi)) => {
            c.fill("portal.results.range.between", &[("low", &bound(c, lo)), ("high", &bound(c, hi))])
        }
        (Some(lo), None) => c.fill("portal.results.range.min", &[("low", &bound(c, lo))]),
        (None, Some(hi)) => c.fill("portal.results.range.max", &[("high", &bound(c, hi))]),
        (None, None) => String::new(),
    }
}

/// A result's reading, in words (and a mark beside them, never the colour alone), under its
/// value in the same cell: a phone shows both without scrolling the table sideways.
fn reading(c: &Catalogue, e: &ResultEntry) -> String {
    let (key, mark) = match portal::flag(e) {
        Some(Flag::Critical) => ("portal.flag.critical", "!!"),
        Some(Flag::High) => ("portal.flag.high", "↑"),
        Some(Flag::Low) => ("portal.flag.low", "↓"),
        Some(Flag::Abnormal) => ("portal.flag.abnormal", "!"),
        None if e.interpretation == Interpretation::Normal => {
            return format!("<span class=\"hint\">{}</span>", escape(c.get("portal.flag.normal")));
        }
        None => return String::new(),
    };
    format!("<strong class=\"flag\"><span aria-hidden=\"true\">{mark} </span>{}</strong>", escape(c.get(key)))
}

fn results(c: &Catalogue, v: &OrderView) -> String {
    let mut out = format!("<h2 id=\"results\">{}</h2>", escape(c.get("portal.results")));
    let Some(r) = &v.results else {
        let _ = write!(out, "<p>{}</p>", escape(c.get("portal.results.none")));
        return out;
    };
    let reported = date(c, r.metadata.date_reported);
    let summary = if r.metadata.status == "final" {
        c.fill("portal.results.final", &[("date", &reported)])
    } else {
        c.fill("portal.results.partial", &[("date", &reported)])
    };
    let _ = write!(
        out,
        "<p>{summary}</p><div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-labelledby=\"results\">\
         <table aria-labelledby=\"results\"><thead><tr>\
         <th scope=\"col\">{test}</th><th scope=\"col\">{value}</th><th scope=\"col\">{range}</th>\
         </tr></thead><tbody>",
        summary = escape(&summary),
        test = escape(c.get("portal.results.test")),
        value = escape(c.get("portal.results.value")),
        range = escape(c.get("portal.results.range")),
    );
    for e in &r.results {
        let value = match portal::numeric_value(e) {
            Some((v, decimals)) => c.measured(v, decimals),
            None => e.result.clone(),
        };
        let unit = e.unit.as_deref().map(|u| format!(" {}", escape(u))).unwrap_or_default();
        let flagged = portal::flag(e).is_some();
        let _ = write!(
            out,
            "<tr{row}><th scope=\"row\">{name}</th><td>{value}{unit}<br>{reading}</td><td>{range}</td></tr>",
            row = if flagged { " class=\"flagged\"" } else { "" },
            name = escape(&e.name),
            value = escape(&value),
            range = escape(&range(c, e)),
            reading = reading(c, e),
        );
    }
    out.push_str("</tbody></table></div>");
    out
}

fn centers(c: &Catalogue, v: &OrderView) -> String {
    let o = &v.order;
    let mut out = format!("<h2 id=\"centers\">{}</h2>", escape(c.get("portal.centers.title")));
    match &v.centers {
        Centers::Near { radius_miles, centers } if centers.is_empty() => {
            let text = c.fill("portal.centers.none", &[("miles", &radius_miles.to_string())]);
            let _ = write!(out, "<p>{}</p>", escape(&text));
        }
        Centers::Near { radius_miles, centers } => {
            let text =
                c.fill("portal.centers.near", &[("lab", &o.lab.name), ("miles", &radius_miles.to_string())]);
            let _ = write!(out, "<p>{}</p><ul class=\"providers\" id=\"psc-list\">", escape(&text));
            for center in centers {
                let m = &center.metadata;
                let second = m.second_line.as_deref().map(|s| format!(", {}", escape(s))).unwrap_or_default();
                let phone = m
                    .phone_number
                    .as_deref()
                    .map(|p| format!("<br><a href=\"tel:{0}\">{0}</a>", escape(p)))
                    .unwrap_or_default();
                let distance = center
                    .distance
                    .parse::<f64>()
                    .map(|d| c.number(d, 1))
                    .unwrap_or_else(|_| center.distance.clone());
                let _ = write!(
                    out,
                    "<li class=\"card psc\"><strong>{name}</strong> <span class=\"muted\">{dist}</span><br>\
                     {line}{second}, {city}, {state} {zip}{phone}</li>",
                    name = escape(&m.name),
                    dist = escape(&c.fill("portal.centers.distance", &[("miles", &distance)])),
                    line = escape(&m.first_line),
                    city = escape(&m.city),
                    state = escape(&m.state),
                    zip = escape(&m.zip_code),
                );
            }
            out.push_str("</ul>");
        }
        Centers::NotNeeded => {
            let key = match o.collection_method {
                CollectionMethod::Testkit => "portal.centers.kit",
                _ => "portal.centers.home_visit",
            };
            let _ = write!(out, "<p>{}</p>", escape(c.get(key)));
        }
        Centers::Unknown => {
            let _ = write!(out, "<p>{}</p>", escape(c.get("portal.centers.unknown")));
        }
    }
    out
}

/// One order: status and its timeline, the requisition, where to give the sample and the results.
pub fn order_page(v: &OrderView, paths: &LinkPaths, back: bool, lang: Language) -> Page {
    let c = catalogue(lang);
    let o = &v.order;
    let mut body = String::new();
    if back {
        let _ = write!(
            body,
            "<p><a href=\"{}\">{}</a></p>",
            escape(&paths.home()),
            escape(c.get("portal.all_orders"))
        );
    }
    let _ = write!(
        body,
        "<h1>{tests}</h1><section class=\"card\" id=\"order-{id}\" data-status=\"{code}\" aria-label=\"{label}\">\
         {facts}<p>{req}</p></section>",
        tests = escape(&tests(c, o)),
        id = o.id,
        code = escape(&o.status),
        label = escape(c.get("portal.order")),
        facts = facts(c, o),
        req = requisition_link(c, o),
    );
    body.push_str(&timeline(c, o));
    body.push_str(&centers(c, v));
    body.push_str(&results(c, v));
    body.push_str(&valid_until(c, v.expires_at));
    Page::new(c.fill("portal.order_title", &[("tests", &tests(c, o))]), body).wide().language(lang)
}

/// A page that only says something, in the reader's language.
pub fn message(status: StatusCode, lang: Language, title_key: &str, text: &str) -> Page {
    Page::message(status, catalogue(lang).get(title_key), text).language(lang)
}

/// The identity check's first step: where to send the code.
pub fn verify_start(
    d: &Destinations,
    paths: &LinkPaths,
    csrf: &str,
    error: Option<&str>,
    lang: Language,
) -> Page {
    let c = catalogue(lang);
    let title = c.get("portal.verify.title");
    let mut body = format!("<h1>{}</h1>", escape(title));
    if let Some(e) = error {
        let _ = write!(body, "<p class=\"error\" role=\"alert\">{}</p>", escape(e));
    }
    let options: Vec<(Channel, &str)> =
        [Channel::Email, Channel::Sms].into_iter().filter_map(|ch| d.hint(ch).map(|h| (ch, h))).collect();
    if options.is_empty() {
        let _ = write!(body, "<p>{}</p>", escape(c.get("portal.verify.no_destination")));
        return Page::new(title, body).status(StatusCode::CONFLICT).language(lang);
    }
    let _ = write!(
        body,
        "<p>{why}</p><form method=\"post\" action=\"{action}\" class=\"card\">{csrf}<fieldset><legend>{legend}</legend>",
        why = escape(c.get("portal.verify.why")),
        action = escape(&paths.send_code()),
        csrf = csrf_input(csrf),
        legend = escape(c.get("portal.verify.send_by")),
    );
    for (i, (ch, hint)) in options.iter().enumerate() {
        let key = match ch {
            Channel::Email => "portal.verify.email_to",
            Channel::Sms => "portal.verify.sms_to",
        };
        let _ = write!(
            body,
            "<label class=\"choice\" for=\"channel-{v}\"><input type=\"radio\" id=\"channel-{v}\" name=\"channel\" \
             value=\"{v}\"{checked}> {label}</label>",
            v = ch.as_str(),
            checked = if i == 0 { " checked" } else { "" },
            label = escape(&c.fill(key, &[("hint", hint)])),
        );
    }
    let _ = write!(
        body,
        "</fieldset><button type=\"submit\">{}</button></form>",
        escape(c.get("portal.verify.send"))
    );
    Page::new(title, body).language(lang)
}

/// What the code step says: a notice above the form, or an error about the typed code.
pub enum CodeNote<'a> {
    None,
    Notice(&'a str),
    Error(&'a str),
}

/// The identity check's second step: type the code.
pub fn verify_code(
    paths: &LinkPaths,
    csrf: &str,
    channel: Channel,
    hint: &str,
    note: CodeNote<'_>,
    lang: Language,
) -> Page {
    let c = catalogue(lang);
    let title = c.get("portal.code.title");
    let mut body = format!("<h1>{}</h1>", escape(title));
    let mut described = "";
    match note {
        CodeNote::Error(e) => {
            let _ = write!(body, "<p class=\"error\" id=\"code-error\" role=\"alert\">{}</p>", escape(e));
            described = " aria-invalid=\"true\" aria-describedby=\"code-error\"";
        }
        CodeNote::Notice(n) => {
            let _ = write!(body, "<p class=\"notice\" role=\"status\">{}</p>", escape(n));
        }
        CodeNote::None => {}
    }
    let sent = match channel {
        Channel::Email => "portal.code.sent_email",
        Channel::Sms => "portal.code.sent_sms",
    };
    let _ = write!(
        body,
        "<p>{sent}</p>\
         <form method=\"post\" action=\"{verify}\" class=\"card\">{csrf}\
         <input type=\"hidden\" name=\"channel\" value=\"{channel}\">\
         <label for=\"code\">{label}</label>\
         <input id=\"code\" name=\"code\" type=\"text\" inputmode=\"numeric\" autocomplete=\"one-time-code\" \
         required maxlength=\"12\" autofocus{described}>\
         <button type=\"submit\">{verify_text}</button></form>\
         <form method=\"post\" action=\"{send}\">{csrf}<input type=\"hidden\" name=\"channel\" value=\"{channel}\">\
         <button type=\"submit\" class=\"secondary\">{resend}</button></form>",
        sent = escape(&c.fill(sent, &[("hint", hint)])),
        verify = escape(&paths.verify()),
        send = escape(&paths.send_code()),
        csrf = csrf_input(csrf),
        channel = channel.as_str(),
        label = escape(c.get("portal.code.label")),
        verify_text = escape(c.get("portal.code.verify")),
        resend = escape(c.get("portal.code.resend")),
    );
    Page::new(title, body).language(lang)
}

/// After the last wrong try: a new code is needed.
pub fn too_many_attempts(paths: &LinkPaths, csrf: &str, channel: Channel, lang: Language) -> Page {
    let c = catalogue(lang);
    let title = c.get("portal.code.too_many.title");
    let body = format!(
        "<h1>{title}</h1><p class=\"error\" role=\"alert\">{text}</p>\
         <form method=\"post\" action=\"{action}\">{csrf}<input type=\"hidden\" name=\"channel\" value=\"{channel}\">\
         <button type=\"submit\">{resend}</button></form>",
        title = escape(title),
        text = escape(&c.fill("portal.code.too_many", &[("count", &MAX_ATTEMPTS.to_string())])),
        action = escape(&paths.send_code()),
        csrf = csrf_input(csrf),
        channel = channel.as_str(),
        resend = escape(c.get("portal.code.resend")),
    );
    Page::new(title, body).status(StatusCode::TOO_MANY_REQUESTS).language(lang)
}
