//! A tonic codec for messages known only at run time: requests are encoded from, and
//! responses decoded into, prost-reflect's `DynamicMessage` of the method's types.

use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

/// Encodes any dynamic message; decodes responses as `output`.
pub(crate) struct DynamicCodec {
    output: MessageDescriptor,
}

impl DynamicCodec {
    pub(crate) fn new(output: MessageDescriptor) -> Self {
        DynamicCodec { output }
    }
}

impl Codec for DynamicCodec {
    type Encode = DynamicMessage;
    type Decode = DynamicMessage;
    type Encoder = DynamicEncoder;
    type Decoder = DynamicDecoder;

    fn encoder(&mut self) -> DynamicEncoder {
        DynamicEncoder
    }

    fn decoder(&mut self) -> DynamicDecoder {
        DynamicDecoder(self.output.clone())
    }
}

pub(crate) struct DynamicEncoder;

impl Encoder for DynamicEncoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn encode(&mut self, item: DynamicMessage, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|e| Status::internal(format!("encoding the request: {e}")))
    }
}

pub(crate) struct DynamicDecoder(MessageDescriptor);

impl Decoder for DynamicDecoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<DynamicMessage>, Status> {
        DynamicMessage::decode(self.0.clone(), src)
            .map(Some)
            .map_err(|e| {
                Status::internal(format!(
                    "the response is no `{}` message: {e}",
                    self.0.full_name()
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_a_message_through_its_wire_form() {
        let fds = prost_reflect::prost_types::FileDescriptorSet {
            file: vec![prost_reflect::prost_types::FileDescriptorProto {
                name: Some("t.proto".into()),
                package: Some("t".into()),
                syntax: Some("proto3".into()),
                message_type: vec![prost_reflect::prost_types::DescriptorProto {
                    name: Some("M".into()),
                    field: vec![prost_reflect::prost_types::FieldDescriptorProto {
                        name: Some("id".into()),
                        number: Some(1),
                        r#type: Some(3), // int64
                        label: Some(1),
                        json_name: Some("id".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let pool = prost_reflect::DescriptorPool::from_file_descriptor_set(fds).unwrap();
        let desc = pool.get_message_by_name("t.M").unwrap();
        let msg =
            DynamicMessage::deserialize(desc.clone(), serde_json::json!({ "id": "42" })).unwrap();
        let bytes = msg.encode_to_vec();
        assert_eq!(bytes, vec![0x08, 42]);
        let back = DynamicMessage::decode(desc, bytes.as_slice()).unwrap();
        assert_eq!(back.get_field_by_name("id").unwrap().as_i64(), Some(42));
    }
}
