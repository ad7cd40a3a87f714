import Foundation
import TuisongCore
import TuisongHTTP

/// Every Easemob REST route the provider serves, under `/{org}/{app}`.
enum EasemobRoutes {
    /// The third segment of every Easemob REST path.
    static let resources: Set<String> = ["token", "users", "messages", "chatgroups", "chatrooms", "notification"]
    /// The gateway's own first segments (native and admin APIs), never Easemob's.
    static let gatewayNamespaces: Set<String> = ["api", "admin"]

    static func register(_ provider: EasemobProvider, on group: RouteGroup) {
        let base = "/{org}/{app}"
        group.add(.POST, "\(base)/token") { await provider.token($0) }

        group.add(.POST, "\(base)/users") { await provider.registerUsers($0) }
        group.add(.GET, "\(base)/users") { await provider.listUsers($0) }
        group.add(.GET, "\(base)/users/{username}") { await provider.getUser($0) }
        group.add(.PUT, "\(base)/users/{username}") { await provider.updateUser($0) }
        group.add(.DELETE, "\(base)/users/{username}") { await provider.deleteUser($0) }
        group.add(.PUT, "\(base)/users/{username}/password") { await provider.setPassword($0) }
        group.add(.PUT, "\(base)/users/{username}/push/binding") { await provider.bind($0) }
        group.add(.GET, "\(base)/users/{username}/push/binding") { await provider.bindings($0) }
        group.add(.GET, "\(base)/users/{username}/offline_msg_count") { await provider.offlineCount($0) }
        group.add(.PUT, "\(base)/users/{username}/notification/language") { await provider.setLanguage($0) }
        group.add(.GET, "\(base)/users/{username}/notification/language") { await provider.getLanguage($0) }
        group.add(.PUT, "\(base)/users/{username}/notification/{chattype}/{key}") { await provider.setNotification($0) }
        group.add(.GET, "\(base)/users/{username}/notification/{chattype}/{key}") { await provider.getNotification($0) }

        group.add(.POST, "\(base)/notification/template") { await provider.createTemplate($0) }
        group.add(.GET, "\(base)/notification/template/{name}") { await provider.getTemplate($0) }
        group.add(.DELETE, "\(base)/notification/template/{name}") { await provider.deleteTemplate($0) }

        group.add(.POST, "\(base)/messages") { await provider.sendOld($0) }
        group.add(.POST, "\(base)/messages/users") { await provider.send($0, .users) }
        group.add(.POST, "\(base)/messages/chatgroups") { await provider.send($0, .chatgroups) }
        group.add(.POST, "\(base)/messages/chatrooms") { await provider.sendToRooms($0) }

        // The router ignores a trailing slash, so `POST chatgroups/` lands here too.
        group.add(.POST, "\(base)/chatgroups") { await provider.createGroup($0) }
        group.add(.GET, "\(base)/chatgroups/{group}") { await provider.getGroup($0) }
        group.add(.PUT, "\(base)/chatgroups/{group}") { await provider.updateGroup($0) }
        group.add(.DELETE, "\(base)/chatgroups/{group}") { await provider.deleteGroup($0) }
        group.add(.GET, "\(base)/chatgroups/{group}/users") { await provider.listMembers($0) }
        group.add(.POST, "\(base)/chatgroups/{group}/users") { await provider.addMembers($0) }
        group.add(.POST, "\(base)/chatgroups/{group}/users/{username}") { await provider.addMember($0) }
        group.add(.DELETE, "\(base)/chatgroups/{group}/users/{username}") { await provider.removeMember($0) }
    }
}
