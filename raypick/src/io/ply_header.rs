//! The header of a PLY file: encoding, elements and their properties.

/// How the body of a PLY file is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Whitespace-separated decimal numbers.
    Ascii,
    /// Raw values, least significant byte first.
    BinaryLittleEndian,
    /// Raw values, most significant byte first.
    BinaryBigEndian,
}

/// A PLY scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
}

impl Scalar {
    /// The type named `name` (both the classic and the sized spellings).
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "char" | "int8" => Self::I8,
            "uchar" | "uint8" => Self::U8,
            "short" | "int16" => Self::I16,
            "ushort" | "uint16" => Self::U16,
            "int" | "int32" => Self::I32,
            "uint" | "uint32" => Self::U32,
            "float" | "float32" => Self::F32,
            "double" | "float64" => Self::F64,
            _ => return None,
        })
    }

    /// Size in bytes in a binary body.
    pub(crate) fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::I16 | Self::U16 => 2,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::F64 => 8,
        }
    }
}

/// What one property of an element holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// One value.
    Scalar(Scalar),
    /// A count of type `count`, then that many values of type `item`.
    List { count: Scalar, item: Scalar },
}

/// One property of an element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Property {
    pub(crate) name: String,
    pub(crate) kind: Kind,
}

/// One element of the header: `count` rows of `properties`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Element {
    pub(crate) name: String,
    pub(crate) count: u64,
    pub(crate) properties: Vec<Property>,
}

impl Element {
    /// The position of the property called `name`, if there is one.
    pub(crate) fn property(&self, name: &str) -> Option<usize> {
        self.properties.iter().position(|p| p.name == name)
    }

    /// The fewest bytes one row can take in `encoding` (at least 1), used to bound
    /// memory reserved from declared counts by what the file can hold.
    pub(crate) fn min_row_bytes(&self, encoding: Encoding) -> usize {
        let bytes = match encoding {
            // A digit and a separator per value.
            Encoding::Ascii => 2 * self.properties.len(),
            Encoding::BinaryLittleEndian | Encoding::BinaryBigEndian => self
                .properties
                .iter()
                .map(|p| match p.kind {
                    Kind::Scalar(s) => s.size(),
                    Kind::List { count, .. } => count.size(),
                })
                .sum(),
        };
        bytes.max(1)
    }
}

/// A parsed header and where the body starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) encoding: Encoding,
    pub(crate) elements: Vec<Element>,
    /// Byte offset of the body (just after the `end_header` line).
    pub(crate) body_start: usize,
}

/// Parses the header at the start of `data`; the error is the message without the
/// file name.
pub(crate) fn parse_header(data: &[u8]) -> Result<Header, String> {
    let mut encoding = None;
    let mut elements: Vec<Element> = Vec::new();
    let mut offset = 0;
    let mut line_number = 0;
    loop {
        let rest = &data[offset..];
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return Err("the header has no 'end_header' line".to_owned());
        };
        line_number += 1;
        offset += end + 1;
        let at = |message: String| format!("header line {line_number}: {message}");
        let line =
            std::str::from_utf8(&rest[..end]).map_err(|_| at("not ASCII text".to_owned()))?;
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        if line_number == 1 {
            if words != ["ply"] {
                return Err("not a PLY file: the first line is not 'ply'".to_owned());
            }
            continue;
        }
        match words.as_slice() {
            ["format", format, "1.0"] => {
                encoding = Some(match *format {
                    "ascii" => Encoding::Ascii,
                    "binary_little_endian" => Encoding::BinaryLittleEndian,
                    "binary_big_endian" => Encoding::BinaryBigEndian,
                    other => return Err(at(format!("unknown format '{other}'"))),
                });
            }
            ["element", name, count] => {
                let count = count
                    .parse()
                    .map_err(|_| at(format!("'{count}' is not an element count")))?;
                elements.push(Element {
                    name: (*name).to_owned(),
                    count,
                    properties: Vec::new(),
                });
            }
            ["property", rest @ ..] => {
                let element = elements
                    .last_mut()
                    .ok_or_else(|| at("a property before any element".to_owned()))?;
                element.properties.push(parse_property(rest).map_err(at)?);
            }
            ["end_header"] => break,
            ["format" | "element" | "end_header", ..] => {
                return Err(at(format!("malformed line '{line}'")));
            }
            // Some exporters write free text without `comment`; it is read as one.
            _ => {}
        }
    }
    let encoding = encoding.ok_or_else(|| "the header has no 'format' line".to_owned())?;
    Ok(Header {
        encoding,
        elements,
        body_start: offset,
    })
}

/// Parses the words after `property`: `TYPE NAME` or `list COUNT ITEM NAME`.
fn parse_property(words: &[&str]) -> Result<Property, String> {
    let scalar =
        |name: &str| Scalar::parse(name).ok_or_else(|| format!("unknown property type '{name}'"));
    let (kind, name) = match words {
        ["list", count, item, name] => (
            Kind::List {
                count: scalar(count)?,
                item: scalar(item)?,
            },
            name,
        ),
        [ty, name] => (Kind::Scalar(scalar(ty)?), name),
        _ => {
            return Err(format!(
                "a property needs 'TYPE NAME' or 'list COUNT_TYPE ITEM_TYPE NAME', got '{}'",
                words.join(" ")
            ));
        }
    };
    Ok(Property {
        name: (*name).to_owned(),
        kind,
    })
}
