//! The requisition form as a one-page PDF (US Letter), written with `pdf-writer` using the
//! standard Helvetica fonts: lab, accession number (text and Code 39 barcode), patient,
//! ordering physician, collection details and the tests ordered.

use pdf_writer::{Content, Finish, Name, Pdf, Rect, Ref, Str};
use wearlab_domain::lab::orders::Requisition;

const WIDTH: f32 = 612.0;
const HEIGHT: f32 = 792.0;
const MARGIN: f32 = 54.0;
/// Lines of tests that fit below the header blocks.
const MAX_TEST_LINES: usize = 34;

/// Code 39 patterns: nine elements (bar, space, bar, ...), `w` wide, `n` narrow.
fn code39(c: char) -> Option<&'static str> {
    Some(match c {
        '0' => "nnnwwnwnn",
        '1' => "wnnwnnnnw",
        '2' => "nnwwnnnnw",
        '3' => "wnwwnnnnn",
        '4' => "nnnwwnnnw",
        '5' => "wnnwwnnnn",
        '6' => "nnwwwnnnn",
        '7' => "nnnwnnwnw",
        '8' => "wnnwnnwnn",
        '9' => "nnwwnnwnn",
        'A' => "wnnnnwnnw",
        'B' => "nnwnnwnnw",
        'C' => "wnwnnwnnn",
        'D' => "nnnnwwnnw",
        'E' => "wnnnwwnnn",
        'F' => "nnwnwwnnn",
        'G' => "nnnnnwwnw",
        'H' => "wnnnnwwnn",
        'I' => "nnwnnwwnn",
        'J' => "nnnnwwwnn",
        'K' => "wnnnnnnww",
        'L' => "nnwnnnnww",
        'M' => "wnwnnnnwn",
        'N' => "nnnnwnnww",
        'O' => "wnnnwnnwn",
        'P' => "nnwnwnnwn",
        'Q' => "nnnnnnwww",
        'R' => "wnnnnnwwn",
        'S' => "nnwnnnwwn",
        'T' => "nnnnwnwwn",
        'U' => "wwnnnnnnw",
        'V' => "nwwnnnnnw",
        'W' => "wwwnnnnnn",
        'X' => "nwnnwnnnw",
        'Y' => "wwnnwnnnn",
        'Z' => "nwwnwnnnn",
        '-' => "nwnnnnwnw",
        '*' => "nwnnwnwnn",
        _ => return None,
    })
}

const NARROW: f32 = 1.0;
const WIDE: f32 = 2.5;

/// The characters drawn for `text`: start and stop `*` around the encodable characters.
fn barcode_chars(text: &str) -> Vec<char> {
    std::iter::once('*')
        .chain(text.chars().map(|c| c.to_ascii_uppercase()).filter(|c| *c != '*' && code39(*c).is_some()))
        .chain(std::iter::once('*'))
        .collect()
}

/// Width of the barcode of `text` in points.
fn barcode_width(text: &str) -> f32 {
    barcode_chars(text).len() as f32 * (3.0 * WIDE + 6.0 * NARROW + NARROW) - NARROW
}

/// Draws `text` as a Code 39 barcode with its lower-left corner at (x, y).
fn barcode(content: &mut Content, text: &str, x: f32, y: f32, height: f32) {
    let (narrow, wide) = (NARROW, WIDE);
    let mut pos = x;
    content.set_fill_gray(0.0);
    for c in barcode_chars(text) {
        let pattern = code39(c).expect("filtered");
        for (i, e) in pattern.chars().enumerate() {
            let w = if e == 'w' { wide } else { narrow };
            if i % 2 == 0 {
                content.rect(pos, y, w, height);
                content.fill_nonzero();
            }
            pos += w;
        }
        pos += narrow;
    }
}

/// PDF strings here are Latin text: anything outside printable ASCII becomes `?`.
fn ascii(s: &str) -> Vec<u8> {
    s.chars().map(|c| if (' '..='~').contains(&c) { c as u8 } else { b'?' }).collect()
}

struct Writer {
    content: Content,
    y: f32,
}

impl Writer {
    fn text(&mut self, font: &[u8], size: f32, x: f32, s: &str) {
        self.content.begin_text();
        self.content.set_font(Name(font), size);
        self.content.next_line(x, self.y);
        self.content.show(Str(&ascii(s)));
        self.content.end_text();
    }

    fn line(&mut self, font: &[u8], size: f32, s: &str) {
        self.text(font, size, MARGIN, s);
        self.y -= size + 5.0;
    }

    fn label(&mut self, label: &str, value: &str) {
        self.text(b"F2", 10.0, MARGIN, label);
        self.text(b"F1", 10.0, MARGIN + 120.0, value);
        self.y -= 15.0;
    }

    fn rule(&mut self) {
        self.y += 4.0;
        self.content.set_line_width(0.5);
        self.content.move_to(MARGIN, self.y);
        self.content.line_to(WIDTH - MARGIN, self.y);
        self.content.stroke();
        self.y -= 14.0;
    }
}

/// The requisition as PDF bytes.
pub fn render(r: &Requisition) -> Vec<u8> {
    let mut pdf = Pdf::new();
    let (catalog, pages, page, regular, bold, content_id) =
        (Ref::new(1), Ref::new(2), Ref::new(3), Ref::new(4), Ref::new(5), Ref::new(6));
    pdf.catalog(catalog).pages(pages);
    pdf.pages(pages).kids([page]).count(1);
    let mut p = pdf.page(page);
    p.media_box(Rect::new(0.0, 0.0, WIDTH, HEIGHT));
    p.parent(pages);
    p.contents(content_id);
    p.resources().fonts().pair(Name(b"F1"), regular).pair(Name(b"F2"), bold);
    p.finish();
    pdf.type1_font(regular).base_font(Name(b"Helvetica"));
    pdf.type1_font(bold).base_font(Name(b"Helvetica-Bold"));
    pdf.document_info(Ref::new(7))
        .title(pdf_writer::TextStr("Laboratory requisition"))
        .producer(pdf_writer::TextStr("Wearlab"));

    let mut w = Writer { content: Content::new(), y: HEIGHT - MARGIN - 10.0 };
    // The accession number as a barcode in the top right corner, its text below it.
    let bar_width = barcode_width(&r.accession_number);
    let bar_x = WIDTH - MARGIN - bar_width;
    barcode(&mut w.content, &r.accession_number, bar_x, w.y - 24.0, 40.0);
    let top = w.y;
    w.y = top - 38.0;
    w.text(b"F1", 10.0, bar_x, &r.accession_number);
    w.y = top;
    w.line(b"F2", 18.0, "Laboratory Requisition");
    w.line(b"F1", 10.0, &r.lab_name);
    w.line(b"F1", 10.0, &r.lab_address);
    w.y -= 6.0;
    w.label("Accession number", &r.accession_number);
    w.label("Order", &r.order_id.to_string());
    w.label("Ordered", &r.created_at.format("%Y-%m-%d %H:%M UTC").to_string());
    w.y -= 8.0;
    w.rule();

    w.line(b"F2", 12.0, "Patient");
    let p = &r.patient;
    w.label("Name", &format!("{}, {}", p.last_name, p.first_name));
    w.label("Date of birth", &p.dob.format("%Y-%m-%d").to_string());
    w.label("Sex", p.gender.as_str());
    w.label("Phone", &p.phone_number);
    let a = &r.patient_address;
    let street = match &a.second_line {
        Some(s) if !s.is_empty() => format!("{}, {s}", a.first_line),
        _ => a.first_line.clone(),
    };
    w.label("Address", &format!("{street}, {}, {} {}", a.city, a.state, a.zip));
    w.rule();

    w.line(b"F2", 12.0, "Ordering physician");
    w.label("Name", &format!("{} {}", r.physician.first_name, r.physician.last_name));
    w.label("NPI", &r.physician.npi);
    w.rule();

    w.line(b"F2", 12.0, "Collection");
    w.label("Method", &r.collection_method.replace('_', " "));
    w.label("Priority", if r.priority { "STAT" } else { "Routine" });
    w.label("Bill to", &r.billing_type.replace('_', " "));
    w.label("Fasting", if r.fasting { "Required (8-12 hours)" } else { "Not required" });
    w.rule();

    w.line(b"F2", 12.0, "Tests ordered");
    for (code, name) in r.tests.iter().take(MAX_TEST_LINES) {
        w.text(b"F1", 10.0, MARGIN, code);
        w.text(b"F1", 10.0, MARGIN + 80.0, name);
        w.y -= 13.0;
    }
    if r.tests.len() > MAX_TEST_LINES {
        w.line(b"F1", 10.0, &format!("... and {} more", r.tests.len() - MAX_TEST_LINES));
    }
    w.y = MARGIN;
    w.text(b"F1", 8.0, MARGIN, "Present this form and a photo ID at the patient service center.");
    pdf.stream(content_id, &w.content.finish());
    pdf.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_accession_character_has_a_pattern() {
        for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-*".chars() {
            let p = code39(c).unwrap();
            assert_eq!(p.len(), 9);
            assert_eq!(p.matches('w').count(), 3, "{c}");
        }
    }
}
