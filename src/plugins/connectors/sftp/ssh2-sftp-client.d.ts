// ssh2-sftp-client 12 (and ssh2 under it) ship no type declarations: the parts the sftp connector uses.
declare module 'ssh2-sftp-client' {
  import type { EventEmitter } from 'node:events';

  /** ssh2's SFTP status error: `code` is the SFTP status (2 no such file, 3 permission denied, 4 failure...). */
  export interface SftpStatusError extends Error {
    code?: number | string;
  }

  export interface Attributes {
    mode: number;
    uid: number;
    gid: number;
    size: number;
    /** Seconds (SFTP v3). */
    atime: number;
    mtime: number;
  }

  export interface Stats extends Attributes {
    isDirectory(): boolean;
    isFile(): boolean;
    isSymbolicLink(): boolean;
  }

  export interface DirEntry {
    filename: string;
    longname: string;
    attrs: Stats;
  }

  type Cb<T = void> = (err: SftpStatusError | undefined | null, value: T) => void;

  /** ssh2's SFTP client channel (lib/protocol/SFTP.js). */
  export interface SFTPWrapper extends EventEmitter {
    open(path: string, flags: number | string, cb: Cb<Buffer>): void;
    open(path: string, flags: number | string, attrs: Partial<Attributes>, cb: Cb<Buffer>): void;
    close(handle: Buffer, cb: Cb): void;
    read(handle: Buffer, buf: Buffer, off: number, len: number, position: number, cb: (err: SftpStatusError | undefined, bytesRead: number, data: Buffer, position: number) => void): void;
    write(handle: Buffer, buf: Buffer, off: number, len: number, position: number, cb: Cb<number>): void;
    fstat(handle: Buffer, cb: Cb<Stats>): void;
    fsetstat(handle: Buffer, attrs: Partial<Attributes>, cb: Cb): void;
    stat(path: string, cb: Cb<Stats>): void;
    lstat(path: string, cb: Cb<Stats>): void;
    readdir(path: string, cb: Cb<DirEntry[]>): void;
    opendir(path: string, cb: Cb<Buffer>): void;
    mkdir(path: string, cb: Cb): void;
    unlink(path: string, cb: Cb): void;
    rename(from: string, to: string, cb: Cb): void;
    realpath(path: string, cb: Cb<string>): void;
    /** posix-rename@openssh.com; throws synchronously when the server does not offer it. */
    ext_openssh_rename(from: string, to: string, cb: Cb): void;
    /** fsync@openssh.com; throws synchronously when the server does not offer it. */
    ext_openssh_fsync(handle: Buffer, cb: Cb): void;
    /** Extensions the server announced (name -> version). */
    _extensions: Record<string, string>;
  }

  export interface ConnectOptions {
    host: string;
    port: number;
    username: string;
    password?: string;
    privateKey?: Buffer | string;
    passphrase?: string;
    readyTimeout?: number;
    keepaliveInterval?: number;
    keepaliveCountMax?: number;
    hostVerifier?: (key: Buffer, verify: (ok: boolean) => void) => boolean | void;
    algorithms?: { serverHostKey?: string[] | { prepend?: string[]; append?: string[]; remove?: string[] } };
    tryKeyboard?: boolean;
    debug?: (msg: string) => void;
  }

  export interface ListEntry {
    type: string;
    name: string;
    size: number;
    modifyTime: number;
  }

  export default class SftpClient {
    constructor(name?: string, callbacks?: { error?: (err: Error) => void; end?: () => void; close?: () => void });
    /** The ssh2 Client. */
    client: EventEmitter & { end(): void; destroy(): void };
    sftp?: SFTPWrapper;
    connect(options: ConnectOptions): Promise<SFTPWrapper>;
    exists(path: string): Promise<false | 'd' | '-' | 'l'>;
    mkdir(path: string, recursive?: boolean): Promise<string>;
    delete(path: string, notFoundOK?: boolean): Promise<string>;
    posixRename(from: string, to: string): Promise<string>;
    rename(from: string, to: string): Promise<string>;
    end(): Promise<boolean>;
  }
}
