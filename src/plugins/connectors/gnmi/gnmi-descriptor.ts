// gnmi.proto as protobufjs JSON (keepCase), what the client hands to @grpc/proto-loader fromJSON():
// the build compiles TypeScript only and copies no .proto, so the definitions travel inside the
// compiled module. Generated from gnmi.proto; test/connectors/gnmi.test.ts checks that both load to
// the same message and service definitions. Edit gnmi.proto first, then regenerate this file:
// npx tsx scripts/gen-gnmi-descriptor.ts.
export const GNMI_DESCRIPTOR: Record<string, unknown> = {
  nested: {
    gnmi: {
      nested: {
        gNMI: {
          methods: {
            Capabilities: {
              requestType: 'CapabilityRequest',
              responseType: 'CapabilityResponse',
            },
            Subscribe: {
              requestType: 'SubscribeRequest',
              requestStream: true,
              responseType: 'SubscribeResponse',
              responseStream: true,
            },
          },
        },
        Notification: {
          fields: {
            timestamp: {
              type: 'int64',
              id: 1,
            },
            prefix: {
              type: 'Path',
              id: 2,
            },
            alias: {
              type: 'string',
              id: 3,
            },
            update: {
              rule: 'repeated',
              type: 'Update',
              id: 4,
            },
            delete: {
              rule: 'repeated',
              type: 'Path',
              id: 5,
            },
            atomic: {
              type: 'bool',
              id: 6,
            },
          },
        },
        Update: {
          fields: {
            path: {
              type: 'Path',
              id: 1,
            },
            val: {
              type: 'TypedValue',
              id: 3,
            },
            duplicates: {
              type: 'uint32',
              id: 4,
            },
          },
        },
        TypedValue: {
          oneofs: {
            value: {
              oneof: [
                'string_val',
                'int_val',
                'uint_val',
                'bool_val',
                'bytes_val',
                'float_val',
                'decimal_val',
                'leaflist_val',
                'any_val',
                'json_val',
                'json_ietf_val',
                'ascii_val',
                'proto_bytes',
                'double_val',
              ],
            },
          },
          fields: {
            string_val: {
              type: 'string',
              id: 1,
            },
            int_val: {
              type: 'int64',
              id: 2,
            },
            uint_val: {
              type: 'uint64',
              id: 3,
            },
            bool_val: {
              type: 'bool',
              id: 4,
            },
            bytes_val: {
              type: 'bytes',
              id: 5,
            },
            float_val: {
              type: 'float',
              id: 6,
            },
            decimal_val: {
              type: 'Decimal64',
              id: 7,
            },
            leaflist_val: {
              type: 'ScalarArray',
              id: 8,
            },
            any_val: {
              type: 'AnyValue',
              id: 9,
            },
            json_val: {
              type: 'bytes',
              id: 10,
            },
            json_ietf_val: {
              type: 'bytes',
              id: 11,
            },
            ascii_val: {
              type: 'string',
              id: 12,
            },
            proto_bytes: {
              type: 'bytes',
              id: 13,
            },
            double_val: {
              type: 'double',
              id: 14,
            },
          },
        },
        AnyValue: {
          fields: {
            type_url: {
              type: 'string',
              id: 1,
            },
            value: {
              type: 'bytes',
              id: 2,
            },
          },
        },
        Path: {
          fields: {
            origin: {
              type: 'string',
              id: 2,
            },
            elem: {
              rule: 'repeated',
              type: 'PathElem',
              id: 3,
            },
            target: {
              type: 'string',
              id: 4,
            },
          },
        },
        PathElem: {
          fields: {
            name: {
              type: 'string',
              id: 1,
            },
            key: {
              keyType: 'string',
              type: 'string',
              id: 2,
            },
          },
        },
        Encoding: {
          values: {
            JSON: 0,
            BYTES: 1,
            PROTO: 2,
            ASCII: 3,
            JSON_IETF: 4,
          },
        },
        Decimal64: {
          fields: {
            digits: {
              type: 'int64',
              id: 1,
            },
            precision: {
              type: 'uint32',
              id: 2,
            },
          },
        },
        ScalarArray: {
          fields: {
            element: {
              rule: 'repeated',
              type: 'TypedValue',
              id: 1,
            },
          },
        },
        SubscribeRequest: {
          oneofs: {
            request: {
              oneof: ['subscribe', 'poll'],
            },
          },
          fields: {
            subscribe: {
              type: 'SubscriptionList',
              id: 1,
            },
            poll: {
              type: 'Poll',
              id: 3,
            },
          },
        },
        Poll: {
          fields: {},
        },
        SubscribeResponse: {
          oneofs: {
            response: {
              oneof: ['update', 'sync_response'],
            },
          },
          fields: {
            update: {
              type: 'Notification',
              id: 1,
            },
            sync_response: {
              type: 'bool',
              id: 3,
            },
          },
        },
        SubscriptionList: {
          fields: {
            prefix: {
              type: 'Path',
              id: 1,
            },
            subscription: {
              rule: 'repeated',
              type: 'Subscription',
              id: 2,
            },
            use_aliases: {
              type: 'bool',
              id: 3,
            },
            mode: {
              type: 'Mode',
              id: 5,
            },
            allow_aggregation: {
              type: 'bool',
              id: 6,
            },
            use_models: {
              rule: 'repeated',
              type: 'ModelData',
              id: 7,
            },
            encoding: {
              type: 'Encoding',
              id: 8,
            },
            updates_only: {
              type: 'bool',
              id: 9,
            },
          },
          nested: {
            Mode: {
              values: {
                STREAM: 0,
                ONCE: 1,
                POLL: 2,
              },
            },
          },
        },
        Subscription: {
          fields: {
            path: {
              type: 'Path',
              id: 1,
            },
            mode: {
              type: 'SubscriptionMode',
              id: 2,
            },
            sample_interval: {
              type: 'uint64',
              id: 3,
            },
            suppress_redundant: {
              type: 'bool',
              id: 4,
            },
            heartbeat_interval: {
              type: 'uint64',
              id: 5,
            },
          },
        },
        SubscriptionMode: {
          values: {
            TARGET_DEFINED: 0,
            ON_CHANGE: 1,
            SAMPLE: 2,
          },
        },
        CapabilityRequest: {
          fields: {},
        },
        CapabilityResponse: {
          fields: {
            supported_models: {
              rule: 'repeated',
              type: 'ModelData',
              id: 1,
            },
            supported_encodings: {
              rule: 'repeated',
              type: 'Encoding',
              id: 2,
            },
            gNMI_version: {
              type: 'string',
              id: 3,
            },
          },
        },
        ModelData: {
          fields: {
            name: {
              type: 'string',
              id: 1,
            },
            organization: {
              type: 'string',
              id: 2,
            },
            version: {
              type: 'string',
              id: 3,
            },
          },
        },
      },
    },
  },
};
