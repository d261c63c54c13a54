// What a new pipeline starts from when no template is chosen: the smallest complete pipeline.
export const STARTER_PIPELINE = `version: "1"
pipeline:
  name: my-pipeline
  description: Reads CSV files and writes them as NDJSON
  schedule:
    type: manual
  source:
    type: local
    path: /data/in
    file_pattern: "*.csv"
  serializer_in:
    type: csv
  serializer_out:
    type: ndjson
  sinks:
    - type: local
      path: /data/out
`;
