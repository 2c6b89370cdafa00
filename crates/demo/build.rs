//! Generates the gRPC service code from proto/chat.proto with protox (a protobuf compiler
//! in Rust, so no `protoc` is needed) and keeps the compiled descriptor set for server
//! reflection.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/chat.proto");
    let fds = protox::compile(["chat.proto"], ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("chat_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    tonic_prost_build::configure()
        .build_client(false)
        .compile_fds(fds)?;
    Ok(())
}
