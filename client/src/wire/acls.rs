//! ACLs: CreateAcls (API 30) and DescribeAcls (API 29), for the scenarios
//! that run the sink under an authorizer (KIP-939's TWO_PHASE_COMMIT
//! operation).
//!
//! The numeric codes are those of Kafka's `AclOperation`, `ResourceType`,
//! `PatternType` and `AclPermissionType` (read back from the 4.4.0
//! `kafka-clients` jar: TWO_PHASE_COMMIT is 15, added by KIP-939).
//!
//! What the 4.4.0 broker checks for a transactional producer (`KafkaApis`
//! handlers; semantics only): InitProducerId with a transactional id needs
//! WRITE on the TRANSACTIONAL_ID and, when `Enable2Pc` is set, also
//! TWO_PHASE_COMMIT on it, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
//! without a transactional id it needs IDEMPOTENT_WRITE on the cluster or
//! WRITE on some topic. AddPartitionsToTxn, Produce and EndTxn need WRITE on
//! the id (and WRITE on the topics); FindCoordinator needs DESCRIBE on the
//! id; Metadata hides topics without DESCRIBE. WRITE implies DESCRIBE in
//! Kafka's authorizer, but the rig grants both explicitly so a reader of the
//! ACL list need not know that rule.
//!
//! In KRaft mode a broker forwards CreateAcls to the active controller; the
//! ACLs then reach every broker through the metadata log, a little later.
//! [`describe_acls`] asks one broker what *it* enforces, which is how a
//! caller waits until a new ACL is in effect.
use std::time::Duration;

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{CreateAclsRequest, DescribeAclsRequest};
use kafka_protocol::protocol::StrBytes;
use serde::{Deserialize, Serialize};
use tracing::info;

use super::client::Client;
use super::error::{KafkaCode, WireError};

/// `org.apache.kafka.common.acl.AclOperation` codes.
pub mod op {
    pub const ANY: i8 = 1;
    pub const ALL: i8 = 2;
    pub const READ: i8 = 3;
    pub const WRITE: i8 = 4;
    pub const CREATE: i8 = 5;
    pub const DESCRIBE: i8 = 8;
    pub const IDEMPOTENT_WRITE: i8 = 12;
    /// KIP-939: InitProducerId with Enable2Pc.
    pub const TWO_PHASE_COMMIT: i8 = 15;

    pub fn name(code: i8) -> String {
        match code {
            ANY => "ANY".into(),
            ALL => "ALL".into(),
            READ => "READ".into(),
            WRITE => "WRITE".into(),
            CREATE => "CREATE".into(),
            DESCRIBE => "DESCRIBE".into(),
            IDEMPOTENT_WRITE => "IDEMPOTENT_WRITE".into(),
            TWO_PHASE_COMMIT => "TWO_PHASE_COMMIT".into(),
            c => format!("OPERATION_{c}"),
        }
    }
}

/// `org.apache.kafka.common.resource.ResourceType` codes.
pub mod resource {
    pub const ANY: i8 = 1;
    pub const TOPIC: i8 = 2;
    pub const GROUP: i8 = 3;
    pub const CLUSTER: i8 = 4;
    pub const TRANSACTIONAL_ID: i8 = 5;
    /// The one name of the CLUSTER resource.
    pub const CLUSTER_NAME: &str = "kafka-cluster";

    pub fn name(code: i8) -> String {
        match code {
            TOPIC => "TOPIC".into(),
            GROUP => "GROUP".into(),
            CLUSTER => "CLUSTER".into(),
            TRANSACTIONAL_ID => "TRANSACTIONAL_ID".into(),
            c => format!("RESOURCE_{c}"),
        }
    }
}

/// `org.apache.kafka.common.resource.PatternType` codes.
pub mod pattern {
    pub const ANY: i8 = 1;
    pub const LITERAL: i8 = 3;
    pub const PREFIXED: i8 = 4;
}

/// `org.apache.kafka.common.acl.AclPermissionType` codes.
pub mod permission {
    pub const ANY: i8 = 1;
    pub const DENY: i8 = 2;
    pub const ALLOW: i8 = 3;
}

/// One ACL: `principal` may (or may not) do `operation` on the resources
/// named `resource_name` (literally, or every name with that prefix), from
/// `host` (`*` = any).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclBinding {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

impl AclBinding {
    /// ALLOW `operation` on every resource of `resource_type` whose name
    /// starts with `prefix`, from any host.
    pub fn allow_prefixed(principal: &str, resource_type: i8, prefix: &str, operation: i8) -> AclBinding {
        AclBinding {
            resource_type,
            resource_name: prefix.to_string(),
            pattern_type: pattern::PREFIXED,
            principal: principal.to_string(),
            host: "*".to_string(),
            operation,
            permission: permission::ALLOW,
        }
    }

    /// ALLOW `operation` on the cluster resource, from any host.
    pub fn allow_cluster(principal: &str, operation: i8) -> AclBinding {
        AclBinding {
            pattern_type: pattern::LITERAL,
            ..AclBinding::allow_prefixed(principal, resource::CLUSTER, resource::CLUSTER_NAME, operation)
        }
    }

    fn creation(&self) -> AclCreation {
        AclCreation::default()
            .with_resource_type(self.resource_type)
            .with_resource_name(StrBytes::from_string(self.resource_name.clone()))
            .with_resource_pattern_type(self.pattern_type)
            .with_principal(StrBytes::from_string(self.principal.clone()))
            .with_host(StrBytes::from_string(self.host.clone()))
            .with_operation(self.operation)
            .with_permission_type(self.permission)
    }
}

impl std::fmt::Display for AclBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pat = match self.pattern_type {
            pattern::PREFIXED => "prefixed",
            pattern::LITERAL => "literal",
            _ => "other",
        };
        let perm = if self.permission == permission::DENY { "DENY" } else { "ALLOW" };
        write!(
            f,
            "{perm} {} {} on {} {:?} ({pat})",
            self.principal,
            op::name(self.operation),
            resource::name(self.resource_type),
            self.resource_name
        )
    }
}

/// CreateAcls and DescribeAcls v3 (flexible): Kafka 2.8 through 4.4 speak
/// it, and v0 (no pattern types) is gone since 4.0 (KIP-896).
const ACL_API_VERSION: i16 = 3;

/// The node to send ACL requests to: the first broker the client knows.
fn some_node(client: &Client) -> Result<i32, WireError> {
    client.cached_metadata().brokers.first().map(|b| b.node_id).ok_or_else(|| WireError::NoBrokerReachable {
        tried: client.bootstrap_servers().to_vec(),
        last: "no broker in the cluster metadata".into(),
    })
}

/// Creates `acls` (one CreateAcls request, forwarded by the broker to the
/// KRaft controller). Every binding's result is checked: the first failing
/// one is the error, with the broker's message.
pub async fn create_acls(client: &mut Client, acls: &[AclBinding]) -> Result<(), WireError> {
    let node = some_node(client)?;
    let timeout = client.config().request_timeout;
    let req = CreateAclsRequest::default().with_creations(acls.iter().map(AclBinding::creation).collect());
    let conn = client.connection(node).await?;
    let resp = conn.send(&req, ACL_API_VERSION, timeout).await?;
    for (acl, r) in acls.iter().zip(resp.results.iter()) {
        let code = KafkaCode(r.error_code);
        if !code.is_ok() {
            return Err(WireError::Kafka {
                api: "CreateAcls".into(),
                code,
                message: Some(format!(
                    "{acl}: {}",
                    r.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default()
                )),
            });
        }
    }
    for acl in acls {
        info!(%acl, "ACL created");
    }
    Ok(())
}

/// The ACLs broker `node` enforces for `principal` (every resource type,
/// pattern and operation).
pub async fn describe_acls(client: &mut Client, node: i32, principal: &str) -> Result<Vec<AclBinding>, WireError> {
    let timeout = client.config().request_timeout;
    let req = DescribeAclsRequest::default()
        .with_resource_type_filter(resource::ANY)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(pattern::ANY)
        .with_principal_filter(Some(StrBytes::from_string(principal.to_string())))
        .with_host_filter(None)
        .with_operation(op::ANY)
        .with_permission_type(permission::ANY);
    let conn = client.connection(node).await?;
    let resp = conn.send(&req, ACL_API_VERSION, timeout).await?;
    let code = KafkaCode(resp.error_code);
    if !code.is_ok() {
        return Err(WireError::Kafka {
            api: "DescribeAcls".into(),
            code,
            message: resp.error_message.map(|m| m.to_string()),
        });
    }
    let mut out = Vec::new();
    for r in &resp.resources {
        for a in &r.acls {
            out.push(AclBinding {
                resource_type: r.resource_type,
                resource_name: r.resource_name.to_string(),
                pattern_type: r.pattern_type,
                principal: a.principal.to_string(),
                host: a.host.to_string(),
                operation: a.operation,
                permission: a.permission_type,
            });
        }
    }
    Ok(out)
}

/// Waits until every broker in the client's metadata enforces all of
/// `acls` (ACLs reach brokers through the metadata log after the controller
/// has committed them).
pub async fn await_acls(client: &mut Client, acls: &[AclBinding], within: Duration) -> Result<(), WireError> {
    let started = tokio::time::Instant::now();
    let nodes: Vec<i32> = client.cached_metadata().brokers.iter().map(|b| b.node_id).collect();
    let principals: std::collections::BTreeSet<&str> = acls.iter().map(|a| a.principal.as_str()).collect();
    for node in nodes {
        loop {
            let mut seen = Vec::new();
            for p in &principals {
                seen.extend(describe_acls(client, node, p).await?);
            }
            let missing: Vec<&AclBinding> = acls.iter().filter(|a| !seen.contains(a)).collect();
            if missing.is_empty() {
                break;
            }
            if started.elapsed() > within {
                return Err(WireError::Timeout {
                    what: format!(
                        "node {node} does not enforce {} of the new ACLs after {within:?} (e.g. {})",
                        missing.len(),
                        missing[0]
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_render_and_encode() {
        let a = AclBinding::allow_prefixed("User:sink", resource::TRANSACTIONAL_ID, "sh-", op::TWO_PHASE_COMMIT);
        assert_eq!(a.to_string(), r#"ALLOW User:sink TWO_PHASE_COMMIT on TRANSACTIONAL_ID "sh-" (prefixed)"#);
        let c = a.creation();
        assert_eq!((c.resource_type, c.resource_pattern_type, c.operation, c.permission_type), (5, 4, 15, 3));
        let k = AclBinding::allow_cluster("User:sink", op::IDEMPOTENT_WRITE);
        assert_eq!((k.resource_type, k.pattern_type, k.resource_name.as_str()), (4, 3, "kafka-cluster"));
    }
}
