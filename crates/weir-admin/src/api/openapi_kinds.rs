//! The OpenAPI document's filter schemas follow the config's one list of filter kinds
//! (`weir_config::filter::KINDS`): `FilterSpec` offers exactly one `Filter<Kind>` schema per
//! kind, each naming its kind. A kind added to the config without its schema (or a schema
//! left behind for a kind that is gone) fails here, not in a client.

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// `ip_allow` → `FilterIpAllow`.
    fn schema_name(kind: &str) -> String {
        let mut name = String::from("Filter");
        for word in kind.split('_') {
            let mut c = word.chars();
            if let Some(first) = c.next() {
                name.extend(first.to_uppercase());
                name.push_str(c.as_str());
            }
        }
        name
    }

    #[test]
    fn filter_spec_has_one_schema_per_kind_of_the_config() {
        let doc: Value = serde_json::from_str(super::super::OPENAPI).unwrap();
        let schemas = &doc["components"]["schemas"];
        let offered: Vec<String> = schemas["FilterSpec"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["$ref"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let kinds = weir_config::filter::KINDS;
        let expected: Vec<String> = kinds.iter().map(|k| schema_name(k)).collect();
        assert_eq!(
            offered, expected,
            "FilterSpec.oneOf against the config's kinds"
        );
        for kind in kinds {
            let names = &schemas[schema_name(kind)]["properties"]["kind"]["enum"];
            assert_eq!(names, &serde_json::json!([kind]), "{kind}'s schema");
        }
    }
}
