internal import CNGHTTP2

/// nghttp2's server-side callbacks. They are C function pointers, so they capture nothing: the
/// session's user data is the `HTTP2ServerConnection` (unretained — the connection owns the
/// session and deletes it in deinit, so it outlives every callback), and nghttp2 only calls them
/// from inside `mem_recv`/`mem_send` on the connection's event-loop thread.
enum NGHTTP2ServerCallbacks {
    static func install(in callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, onFrameSent)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
    }

    static func error(_ operation: String, _ code: Int32) -> LookAlikeServerError {
        LookAlikeServerError(operation: operation, code: Int(code), message: String(cString: nghttp2_strerror(code)))
    }

    private static func connection(_ userData: UnsafeMutableRawPointer?) -> HTTP2ServerConnection {
        Unmanaged<HTTP2ServerConnection>.fromOpaque(userData!).takeUnretainedValue()
    }

    private static func isRequestHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Bool {
        frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue)
            && frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
    }

    static let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
        guard let frame, isRequestHeaders(frame) else { return 0 }
        let connection = connection(userData)
        connection.streams[frame.pointee.hd.stream_id] = MockStream()
        connection.requestStreamOpened()
        return 0
    }

    static let onHeader: nghttp2_on_header_callback = {
        _, frame, name, nameLength, value, valueLength, _, userData in
        guard let frame, isRequestHeaders(frame), let name, let value,
            let stream = connection(userData).streams[frame.pointee.hd.stream_id]
        else { return 0 }
        stream.head.add(
            name: String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
            value: String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self))
        return 0
    }

    static let onDataChunk: nghttp2_on_data_chunk_recv_callback = {
        _, _, streamID, data, length, userData in
        let connection = connection(userData)
        guard let data, let stream = connection.streams[streamID] else { return 0 }
        stream.bodyLength += length
        // A service that refuses large bodies anyway keeps less of them (its `bodyStorageLimits`).
        if stream.bodyStorageLimit == 0 {
            stream.bodyStorageLimit = connection.core.lookAlikes.bodyStorageLimit(path: stream.head.path)
        }
        let keep = min(length, stream.bodyStorageLimit - stream.body.count)
        if keep > 0 { stream.body.append(contentsOf: UnsafeBufferPointer(start: data, count: keep)) }
        return 0
    }

    static let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
        guard let frame else { return 0 }
        let type = frame.pointee.hd.type
        let flags = frame.pointee.hd.flags
        let endStream = flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        if endStream && (type == UInt8(NGHTTP2_DATA.rawValue) || type == UInt8(NGHTTP2_HEADERS.rawValue)) {
            connection(userData).requestCompleted(streamID: frame.pointee.hd.stream_id)
        } else if type == UInt8(NGHTTP2_SETTINGS.rawValue), flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 {
            connection(userData).settingsAcknowledgedByClient()
        } else if type == UInt8(NGHTTP2_PING.rawValue), flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 {
            connection(userData).core.recorder.update { $0.pingsReceived += 1 }
        }
        return 0
    }

    static let onFrameSent: nghttp2_on_frame_send_callback = { _, frame, userData in
        guard let frame else { return 0 }
        let type = frame.pointee.hd.type
        if type == UInt8(NGHTTP2_GOAWAY.rawValue) {
            connection(userData).core.recorder.update { $0.goawaysSent += 1 }
        } else if type == UInt8(NGHTTP2_RST_STREAM.rawValue)
            && frame.pointee.rst_stream.error_code == NGHTTP2_REFUSED_STREAM.rawValue
        {
            connection(userData).core.recorder.update { $0.refusedStreams += 1 }
        }
        return 0
    }

    static let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, _, userData in
        connection(userData).streams[streamID] = nil
        return 0
    }

    /// Copies an error body out of the stream; END_STREAM goes with the last byte.
    static let readResponseBody: nghttp2_data_source_read_callback = {
        _, streamID, buffer, length, dataFlags, _, userData in
        let owner = connection(userData)
        guard let buffer, let dataFlags, let stream = owner.streams[streamID] else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let count = min(length, stream.responseBody.count - stream.responseOffset)
        if count == 0 && stream.endlessResponse {
            // The endless-answers fault: spaces (JSON whitespace) for as long as the client reads.
            buffer.initialize(repeating: 32, count: length)
            owner.countEndlessAnswerBytes(length)
            return length
        }
        stream.responseBody.withUnsafeBufferPointer { body in
            buffer.update(from: body.baseAddress! + stream.responseOffset, count: count)
        }
        stream.responseOffset += count
        if stream.responseOffset == stream.responseBody.count && !stream.endlessResponse {
            dataFlags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        }
        return count
    }

    /// Lays `:status` and the fields out in one byte buffer and hands nghttp2 an `nghttp2_nv`
    /// array pointing into it; nghttp2 copies name/value pairs on submit, so the buffer may die
    /// afterwards.
    static func withHeaderFields(
        status: Int, _ fields: [(String, String)], _ body: (UnsafePointer<nghttp2_nv>, Int) -> Int32
    ) -> Int32 {
        var bytes: [UInt8] = []
        var offsets: [(name: Int, nameLength: Int, value: Int, valueLength: Int)] = []
        bytes.reserveCapacity(128)
        offsets.reserveCapacity(fields.count + 1)
        func add(_ name: String, _ value: String) {
            let nameStart = bytes.count
            bytes.append(contentsOf: name.utf8)
            let valueStart = bytes.count
            bytes.append(contentsOf: value.utf8)
            offsets.append((nameStart, valueStart - nameStart, valueStart, bytes.count - valueStart))
        }
        add(":status", String(status))
        for (name, value) in fields { add(name, value) }
        return bytes.withUnsafeMutableBufferPointer { storage in
            let base = storage.baseAddress!
            let nva = offsets.map { offset in
                nghttp2_nv(
                    name: base + offset.name, value: base + offset.value, namelen: offset.nameLength,
                    valuelen: offset.valueLength, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return nva.withUnsafeBufferPointer { body($0.baseAddress!, $0.count) }
        }
    }
}
