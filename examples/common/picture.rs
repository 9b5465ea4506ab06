//! What the examples' pictures share: a paint of one colour, and text in the 8×8 bitmap font
//! of `font8x8` (tiny-skia draws no text).

use tiny_skia::{Paint, Pixmap, Rect, Transform};

/// An anti-aliased paint of `rgb` at opacity `alpha`.
pub fn paint(rgb: [u8; 3], alpha: u8) -> Paint<'static> {
    let mut paint = Paint::default();
    paint.set_color_rgba8(rgb[0], rgb[1], rgb[2], alpha);
    paint.anti_alias = true;
    paint
}

/// `text` in the 8×8 font (Latin and Greek letters), each font pixel `scale` pixels square,
/// in `rgb`, from (x, y) at its top left.
pub fn text(pixmap: &mut Pixmap, text: &str, x: f32, y: f32, scale: f32, rgb: [u8; 3]) {
    use font8x8::UnicodeFonts;
    let ink = paint(rgb, 255);
    for (k, ch) in text.chars().enumerate() {
        let Some(rows) = font8x8::BASIC_FONTS
            .get(ch)
            .or_else(|| font8x8::GREEK_FONTS.get(ch))
        else {
            continue;
        };
        for (row, bits) in rows.iter().enumerate() {
            for column in 0..8 {
                if bits & (1 << column) != 0
                    && let Some(rect) = Rect::from_xywh(
                        x + (k as f32 * 8.0 + column as f32) * scale,
                        y + row as f32 * scale,
                        scale,
                        scale,
                    )
                {
                    pixmap.fill_rect(rect, &ink, Transform::identity(), None);
                }
            }
        }
    }
}
