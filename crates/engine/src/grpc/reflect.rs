//! Descriptors from the server: the gRPC server reflection protocol (v1, then v1alpha for
//! older servers), asked once when the run starts for the services of the `grpc:` steps
//! that name no .proto file. Files are fetched with their imports, then built into one pool.

use std::collections::BTreeMap;

use prost::Message;
use prost_reflect::DescriptorPool;
use prost_reflect::prost_types::FileDescriptorProto;
use tonic::transport::Channel;

/// What the reflection service answered to one request.
enum Answer {
    Files(Vec<Vec<u8>>),
    Services(Vec<String>),
    Error(i32, String),
}

/// What a request asks.
#[derive(Clone)]
enum Ask {
    Symbol(String),
    File(String),
    Services,
}

macro_rules! version {
    ($name:ident, $pb:path) => {
        async fn $name(channel: Channel, asks: Vec<Ask>) -> Result<Vec<Answer>, tonic::Status> {
            use pb::server_reflection_request::MessageRequest as Req;
            use pb::server_reflection_response::MessageResponse as Res;
            use $pb as pb;
            let requests: Vec<pb::ServerReflectionRequest> = asks
                .into_iter()
                .map(|a| pb::ServerReflectionRequest {
                    host: String::new(),
                    message_request: Some(match a {
                        Ask::Symbol(s) => Req::FileContainingSymbol(s),
                        Ask::File(f) => Req::FileByFilename(f),
                        Ask::Services => Req::ListServices(String::new()),
                    }),
                })
                .collect();
            let n = requests.len();
            let mut client = pb::server_reflection_client::ServerReflectionClient::new(channel);
            let mut stream = client
                .server_reflection_info(futures_util::stream::iter(requests))
                .await?
                .into_inner();
            let mut out = Vec::with_capacity(n);
            while out.len() < n {
                let Some(r) = stream.message().await? else {
                    break;
                };
                out.push(match r.message_response {
                    Some(Res::FileDescriptorResponse(f)) => Answer::Files(f.file_descriptor_proto),
                    Some(Res::ListServicesResponse(l)) => {
                        Answer::Services(l.service.into_iter().map(|s| s.name).collect())
                    }
                    Some(Res::ErrorResponse(e)) => Answer::Error(e.error_code, e.error_message),
                    _ => Answer::Error(2, "an answer of another kind".into()),
                });
            }
            Ok(out)
        }
    };
}

version!(ask_v1, tonic_reflection::pb::v1);
version!(ask_v1alpha, tonic_reflection::pb::v1alpha);

/// Asks v1, and v1alpha when the server does not know v1.
async fn ask(channel: &Channel, asks: Vec<Ask>, alpha: &mut bool) -> Result<Vec<Answer>, String> {
    let answer = if *alpha {
        None
    } else {
        Some(ask_v1(channel.clone(), asks.clone()).await)
    };
    let answer = match answer {
        Some(Err(s)) if s.code() == tonic::Code::Unimplemented => {
            *alpha = true;
            ask_v1alpha(channel.clone(), asks).await
        }
        Some(a) => a,
        None => ask_v1alpha(channel.clone(), asks).await,
    };
    match answer {
        // Some servers (tonic's) end the stream with NOT_FOUND instead of an error answer.
        Err(s) if s.code() == tonic::Code::NotFound => {
            Ok(vec![Answer::Error(5, s.message().to_string())])
        }
        other => other.map_err(|s| describe(&s)),
    }
}

fn describe(s: &tonic::Status) -> String {
    match s.code() {
        tonic::Code::Unimplemented => "the server does not offer gRPC server reflection: give the service's .proto file with `proto: path/to/file.proto`".into(),
        code => format!("asking the server by reflection failed: {code:?}: {}", s.message()),
    }
}

/// A pool with the files that define `services` and everything they import.
pub(crate) async fn services(
    channel: &Channel,
    services: &[String],
) -> Result<DescriptorPool, String> {
    let mut alpha = false;
    let mut files: BTreeMap<String, FileDescriptorProto> = BTreeMap::new();
    let answers = ask(
        channel,
        services.iter().map(|s| Ask::Symbol(s.clone())).collect(),
        &mut alpha,
    )
    .await?;
    for (service, answer) in services.iter().zip(answers) {
        match answer {
            Answer::Files(f) => add(&mut files, f)?,
            Answer::Error(5, _) => {
                let offered = match ask(channel, vec![Ask::Services], &mut alpha).await?.pop() {
                    Some(Answer::Services(s)) => s
                        .into_iter()
                        .filter(|s| !s.starts_with("grpc.reflection."))
                        .collect::<Vec<_>>()
                        .join(", "),
                    _ => "(it did not list them)".into(),
                };
                return Err(format!(
                    "the server has no service `{service}` (asked by reflection); it offers {offered}"
                ));
            }
            Answer::Error(code, m) => {
                return Err(format!(
                    "reflection could not describe `{service}`: code {code}: {m}"
                ));
            }
            Answer::Services(_) => {
                return Err("reflection answered with a service list instead of files".into());
            }
        }
    }
    // Imports the server did not send along: asked by name, a few rounds at most.
    for _ in 0..8 {
        let missing: Vec<String> = files
            .values()
            .flat_map(|f| f.dependency.iter())
            .filter(|d| !files.contains_key(*d))
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if missing.is_empty() {
            break;
        }
        let answers = ask(
            channel,
            missing.iter().map(|m| Ask::File(m.clone())).collect(),
            &mut alpha,
        )
        .await?;
        for (name, a) in missing.iter().zip(answers) {
            match a {
                Answer::Files(f) => add(&mut files, f)?,
                _ => {
                    return Err(format!(
                        "reflection could not send `{name}`, which the service's files import"
                    ));
                }
            }
        }
    }
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(files.into_values())
        .map_err(|e| format!("the server's descriptors do not build: {e}"))?;
    Ok(pool)
}

fn add(
    files: &mut BTreeMap<String, FileDescriptorProto>,
    encoded: Vec<Vec<u8>>,
) -> Result<(), String> {
    for bytes in encoded {
        let f = FileDescriptorProto::decode(bytes.as_slice())
            .map_err(|e| format!("reflection sent a file descriptor that does not decode: {e}"))?;
        files.insert(f.name().to_string(), f);
    }
    Ok(())
}
