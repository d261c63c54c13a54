// SNMP protocol core shared by the operator console and the engine's snmp_poll / snmp_trap plugins.
export * from './values.js';
export { rawValue, decodeMessage, encodeCommunity, PduType, type Pdu, type SnmpVersion } from './message.js';
export { SnmpAgent, type AgentOptions, type OidOverride, type ActivityEntry } from './agent.js';
export { defaultDevice, type DeviceOptions } from './device.js';
export { SnmpSession, type TargetOptions } from './session.js';
export { walk, walkSession, compareOidStrings, type WalkOptions } from './walker.js';
export { TrapReceiver, v1TrapOid, type TrapEvent, type TrapReceiverOptions, type ReceiverUserConfig } from './trap-receiver.js';
export { sendTrap, v1Fields, type TrapSendOptions, type TrapSendResult, type VarBindInput } from './trap-sender.js';
export { AUTH_PROTOCOLS, PRIV_PROTOCOLS, parseAuthProtocol, parsePrivProtocol, type AuthProtocol, type PrivProtocol, type UsmUserConfig } from './usm.js';
