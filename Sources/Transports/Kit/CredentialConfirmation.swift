import TuisongCore
import TuisongDelivery
import TuisongHTTPClient

/// Reads the answer to a `TokenBatchService.confirm` request: the service refusing who is
/// asking (401 or 403, or one of its own codes for a key it does not know) refuses the
/// credential; no answer or a 5xx leaves it unchecked; any other answer (the request's want of
/// a device refused past authentication) takes it.
public enum CredentialConfirmation {
    public static func read(
        _ result: Result<HTTPClientResponse, HTTPClientError>, refusedCodes: Set<String> = [],
        code: (JSONValue?) -> String?
    ) -> AccessTokenFailure? {
        switch result {
        case .failure(let error):
            return .unavailable(.transport(error.code), retryAfter: nil)
        case .success(let response):
            let serviceCode = code(try? JSONValue(parsing: response.body))
            let reason = SendReason.service(serviceCode ?? "HTTP\(response.status)")
            if response.status == 401 || response.status == 403 { return .refused(reason) }
            if let serviceCode, refusedCodes.contains(serviceCode) { return .refused(reason) }
            if response.status >= 500 { return .unavailable(reason, retryAfter: nil) }
            return nil
        }
    }
}
