import Foundation
import OnTheMapClient
import OnTheMapShared

/// Class maps, their members, invites and hidden pins as aligned tables, as `PinTable` draws pins.
enum MapTables {
    static func maps(_ maps: [ClassMap], width: Int?) -> [String] {
        let rows = maps.map { map in
            [map.slug, map.name, map.role?.rawValue ?? "", readers(map.read), posters(map.post), String(map.pinsPerStudent)]
        }
        return PinTable.table(headers: ["SLUG", "NAME", "ROLE", "READ", "POST", "PINS"], rows: rows, width: width, shrinkable: [1])
    }

    static func members(_ members: [MapMember], now: Date = Date(), width: Int?) -> [String] {
        let rows = members.map { member in
            [
                member.fullName.isEmpty ? member.key : member.fullName, member.key, member.role.rawValue,
                PinTable.age(of: member.joinedAt.date, now: now),
            ]
        }
        return PinTable.table(headers: ["NAME", "KEY", "ROLE", "JOINED"], rows: rows, width: width, shrinkable: [0])
    }

    static func invites(_ invites: [MapInvite], now: Date = Date(), width: Int?) -> [String] {
        let rows = invites.map { invite in
            [invite.code, uses(invite), invite.expiresAt.map { until($0.date, now: now) } ?? "never", invite.url]
        }
        return PinTable.table(headers: ["CODE", "USED", "EXPIRES", "URL"], rows: rows, width: width, shrinkable: [3])
    }

    static func hidden(_ pins: [HiddenPin], now: Date = Date(), width: Int?) -> [String] {
        let rows = pins.map { hidden in
            [
                hidden.pin.objectId.rawValue, PinLine.name(hidden.pin), hidden.pin.mapString, hidden.reason,
                PinTable.age(of: hidden.hiddenAt.date, now: now),
            ]
        }
        return PinTable.table(headers: ["OBJECTID", "NAME", "PLACE", "REASON", "HIDDEN"], rows: rows, width: width, shrinkable: [3, 2, 1])
    }

    /// `ios-2027 · iOS 2027 · members read · members post · 3 pins each · no approval`, and the caller's role.
    static func describe(_ map: ClassMap) -> String {
        var parts = [
            map.slug, map.name, "\(readers(map.read)) read", "\(posters(map.post)) post", "\(map.pinsPerStudent) pins each",
            map.approval ? "members approved" : "no approval",
        ]
        if let role = map.role { parts.append("you: \(role.rawValue)") }
        return parts.joined(separator: " · ")
    }

    static func readers(_ read: ClassMap.ReadAccess) -> String {
        switch read {
        case .public: "anyone"
        case .members: "members"
        }
    }

    static func posters(_ post: ClassMap.PostAccess) -> String {
        switch post {
        case .members: "members"
        case .signedIn: "signed-in"
        }
    }

    /// `0 of 30`, or `4` for an invite without a limit.
    static func uses(_ invite: MapInvite) -> String {
        invite.uses.map { "\(invite.used) of \($0)" } ?? String(invite.used)
    }

    /// "in 40 min", "in 5 h", "in 6 days", then the date; "expired" once past.
    static func until(_ date: Date, now: Date = Date()) -> String {
        let seconds = Int(date.timeIntervalSince(now))
        switch seconds {
        case ..<0: return "expired"
        case ..<3600: return "in \(max(seconds / 60, 1)) min"
        case ..<86_400: return "in \(seconds / 3600) h"
        case ..<(86_400 * 2): return "in 1 day"
        case ..<(86_400 * 30): return "in \(seconds / 86_400) days"
        default: return String(Timestamp(date).iso8601.prefix(10))
        }
    }
}
