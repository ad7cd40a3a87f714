// The TuisongHTTPClient benchmark of docs/benchmarks.md: N POSTs to one URL, all submitted at
// once, answered through completion handlers; prints req/s, statuses, the client's statistics,
// peak RSS and CPU. Not built by default (Package.swift carries no benchmark target): to run it,
//   mkdir Sources/curlbench && cp bench/http-client/main.swift Sources/curlbench/
//   add `.executableTarget(name: "curlbench", dependencies: ["TuisongHTTPClient"], path: "Sources/curlbench")`
//   swift build -c release --product curlbench
//   .build/release/curlbench URL COUNT CA_FILE PROVIDER_TOKEN [CONNECTIONS] [MAX_IN_FLIGHT]
// against `tuisong apns-mock --port 0 --setup DIR/mock.json --max-streams 1000 --streams-before-token 1000`
// (URL https://127.0.0.1:PORT/3/device/<64 hex>, CA_FILE and PROVIDER_TOKEN from its banner),
// alternating with h2load -n COUNT -c 1 -m 1000 on the same URL, payload and headers.
import Foundation
import Synchronization
import TuisongHTTPClient

let arguments = CommandLine.arguments
let url = arguments[1]
let total = Int(arguments[2])!
let caFile = arguments[3]
let token = arguments[4]
let connections = arguments.count > 5 ? Int(arguments[5])! : 4
let maxInFlight = arguments.count > 6 ? Int(arguments[6])! : 2000
let payload = Array(
    #"{"aps":{"alert":{"body":"bench","title":"Tuisong"},"badge":1,"sound":"default"},"id":42}"#.utf8)
let client = try HTTPClient(
    configuration: .init(caFile: caFile, maxConnectionsPerHost: connections, maxInFlight: maxInFlight),
    label: "bench")
let done = Atomic<Int>(0)
let statuses = Mutex<[Int: Int]>([:])
let errors = Mutex<[String: Int]>([:])
let finished = DispatchSemaphore(value: 0)
let request = HTTPClientRequest(
    url: url,
    headers: [
        ("authorization", "bearer \(token)"), ("apns-topic", "com.example.bench"), ("apns-push-type", "alert"),
        ("content-type", "application/json"),
    ],
    body: payload)
let start = ContinuousClock.now
for _ in 0..<total {
    client.execute(request) { result in
        switch result {
        case .success(let response): statuses.withLock { $0[response.status, default: 0] += 1 }
        case .failure(let error): errors.withLock { $0[error.description, default: 0] += 1 }
        }
        if done.add(1, ordering: .relaxed).newValue == total { finished.signal() }
    }
}
finished.wait()
let elapsed = ContinuousClock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM") } ?? ""
var usage = rusage()
getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
let cpu =
    Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
    + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
print(
    "\(total) requests in \(String(format: "%.2f", seconds)) s = \(Int(Double(total) / seconds)) req/s;",
    "statuses \(statuses.withLock { $0 }); errors \(errors.withLock { $0 }); \(client.statistics);",
    "\(peak); CPU \(String(format: "%.2f", cpu)) s")
client.shutdown()
